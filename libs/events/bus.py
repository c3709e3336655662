"""Connecting to NATS as one user: its credential, its inbox prefix, endless reconnects."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client

from overseer.events.config import Settings
from overseer.events.permissions import inbox_prefix

log = logging.getLogger("overseer.bus")


@dataclass(frozen=True)
class NatsCredential:
    """How one NATS user proves who it is: an nkey seed file (the embedded server) or a password.

    ``user`` also names the connection's inbox prefix (``_INBOX.<user>``): the permissions let a
    user receive only under its own prefix. No user (an external server without authorization)
    means an anonymous connection with the default prefix.
    """

    user: str | None = None
    password: str | None = None
    seed_file: Path | None = None

    def env(self) -> dict[str, str]:
        """The environment that hands this credential to a child process (a path, never the seed)."""
        env: dict[str, str] = {}
        if self.user:
            env["OVERSEER_NATS_USER"] = self.user
        if self.seed_file is not None:
            env["OVERSEER_NATS_NKEY_SEED_FILE"] = str(self.seed_file)
        if self.password:
            env["OVERSEER_NATS_PASSWORD"] = self.password
        return env


def credentials_for(settings: Settings, user: str) -> NatsCredential:
    """``user``'s credential: from the environment (``OVERSEER_NATS_USER`` with ``_NKEY_SEED_FILE``
    or ``_PASSWORD``), else the embedded server's keyring under ``OVERSEER_HOME``.

    A server without authorization ignores the user name, so passing one is always safe.
    """
    seed = os.environ.get("OVERSEER_NATS_NKEY_SEED_FILE")
    password = os.environ.get("OVERSEER_NATS_PASSWORD")
    if seed or password:
        return NatsCredential(
            os.environ.get("OVERSEER_NATS_USER") or user, password, Path(seed) if seed else None
        )
    seed_file = settings.home / "nats" / "keys" / f"{user}.nk"
    if seed_file.is_file():
        return NatsCredential(user, seed_file=seed_file)
    return NatsCredential()


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
