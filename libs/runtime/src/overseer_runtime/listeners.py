"""Whether anyone follows the ephemeral events live, so that a service builds and sends them only then.

Ephemeral events (``overseer_events.subjects.EPHEMERAL``: the observer's execution states) go out on core
NATS to the gateway, which passes them on to the WebSocket clients that follow them; with none following,
each one would be built, encoded and sent for nobody (an eighth of the observer's work per action). So
the gateway says on core NATS that a live client follows them (:func:`say_listening`: at once, then every
:data:`REPEAT_SECONDS` while one does), and a service that sends them (:class:`Listeners`) takes that word
as good for :data:`HEARD_FOR_SECONDS`: a client that arrives is served from the next state on, and one
that leaves stops the sending a few seconds later. A service that starts while a client follows hears
it within :data:`REPEAT_SECONDS`; what it would have sent meanwhile is what such a client misses anyway
(ephemeral events are not kept).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from overseer_events.subjects import Subjects

log = logging.getLogger("overseer.runtime")

REPEAT_SECONDS = 1.0
HEARD_FOR_SECONDS = 3.0


class Listeners:
    """Whether a live client follows the ephemeral events, as last heard from the gateway."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = float("-inf")

    @property
    def present(self) -> bool:
        return self._clock() < self._until

    def heard(self) -> None:
        self._until = self._clock() + HEARD_FOR_SECONDS

    async def follow(self, nc: Client, subjects: Subjects) -> Subscription:
        """Listen for the gateway's word on ``nc``."""

        async def said(_: Msg) -> None:
            self.heard()

        return await nc.subscribe(subjects.ephemeral_listeners, cb=said)


async def say_listening(nc: Client, subjects: Subjects) -> None:
    """Say that a live client follows the ephemeral events, at once and every :data:`REPEAT_SECONDS`,
    until cancelled (the gateway runs it while one does)."""
    while True:
        try:  # the client's flusher sends it within this turn of the loop: no round trip to wait for
            await nc.publish(subjects.ephemeral_listeners, b"")
        except Exception as exc:  # a word repeated every second: one lost (a reconnect) is said again
            log.debug("could not say that a live client listens: %r", exc)
        await asyncio.sleep(REPEAT_SECONDS)
