"""The executor's registered tool names, asked over request/reply (``tools.list``) and kept ``ttl`` seconds.

Kept so a proposal does not cost a round trip; asked again at once for a name not in the list (an MCP
server added a tool a moment ago), at most once per ``refresh`` seconds, so a client sending unknown
names cannot make the gateway ask the executor for each.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from overseer_gateway.application.ports import Peers
from overseer_runtime.rpc import RpcError

log = logging.getLogger("overseer.gateway")


class ExecutorTools:
    """:class:`~overseer_gateway.application.ports.KnownTools` over the executor's ``tools.list``."""

    def __init__(
        self, peers: Peers, *, ttl: float, refresh: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.peers = peers
        self.ttl = ttl
        self.refresh = refresh
        self.clock = clock
        self._names: frozenset[str] | None = None
        self._asked_at = float("-inf")

    async def names(self, *, fresh: bool = False) -> frozenset[str] | None:
        now = self.clock()
        age = now - self._asked_at
        if self._names is not None and age < (self.refresh if fresh else self.ttl):
            return self._names
        self._asked_at = now
        try:
            answer = await self.peers.ask("executor", "tools.list", {})
        except RpcError as exc:  # restarting: the last list, or none (then nothing is refused)
            log.warning("the executor's tool list is not available: %s", exc.detail)
            return self._names
        self._names = frozenset(
            str(entry["name"]) for entry in answer if isinstance(entry, dict) and entry.get("name")
        )
        return self._names
