"""Connecting to NATS as one user: its credential, its inbox prefix, endless reconnects."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from nats.aio.client import Client

from overseer_runtime.credentials import NatsCredential
from overseer_runtime.permissions import inbox_prefix

__all__ = ["NatsCredential", "connect"]

log = logging.getLogger("overseer.bus")


async def connect(
    url: str,
    *,
    name: str,
    credential: NatsCredential | None = None,
    on_reconnect: Callable[[], Awaitable[None]] | None = None,
    on_disconnect: Callable[[], Awaitable[None]] | None = None,
    connect_timeout: float = 5.0,
    reconnect: bool = True,
) -> Client:
    """Connect with endless reconnects; callbacks let consumers re-issue their pulls (nats.py #504)."""

    async def error_cb(exc: Exception) -> None:
        log.warning("nats error (%s): %s", name, exc)

    async def reconnected_cb() -> None:
        log.info("nats reconnected (%s)", name)
        if on_reconnect is not None:
            await on_reconnect()

    async def disconnected_cb() -> None:
        log.info("nats disconnected (%s)", name)
        if on_disconnect is not None:
            await on_disconnect()

    options: dict[str, Any] = {
        "servers": [u.strip() for u in url.split(",")],
        "name": name,
        "connect_timeout": connect_timeout,
        # A service waits for the bus forever; a one-off caller (``overseer status``) fails at once.
        # (nats.py tries a server forever at 0: one retry means "fail now")
        "max_reconnect_attempts": -1 if reconnect else 1,
        "reconnect_time_wait": 0.25,
        "allow_reconnect": reconnect,
        "error_cb": error_cb,
        "reconnected_cb": reconnected_cb,
        "disconnected_cb": disconnected_cb,
        "pending_size": 64 * 1024 * 1024,
    }
    credential = credential or NatsCredential()
    if credential.user:
        options["inbox_prefix"] = inbox_prefix(credential.user)
    if credential.seed_file is not None:
        options["nkeys_seed"] = str(credential.seed_file)
    elif credential.password:
        options["user"] = credential.user
        options["password"] = credential.password
    return await nats.connect(**options)
