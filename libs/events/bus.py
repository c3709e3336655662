"""Connecting to NATS as a service and provisioning the JetStream streams."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError, NotFoundError

from overseer.events.config import Settings
from overseer.events.subjects import DEFAULT_SUBJECTS, Subjects

log = logging.getLogger("overseer.bus")


def credentials_for(settings: Settings, user: str) -> tuple[str | None, str | None]:
    """(user, password): ``OVERSEER_NATS_USER``/``_PASSWORD``, else the embedded server's users.json.

    A server without authorization ignores credentials, so passing them is always safe.
    """
    if os.environ.get("OVERSEER_NATS_PASSWORD"):
        return os.environ.get("OVERSEER_NATS_USER") or user, os.environ["OVERSEER_NATS_PASSWORD"]
    users_file = settings.home / "nats" / "users.json"
    if users_file.is_file():
        passwords = json.loads(users_file.read_text(encoding="utf-8"))
        if user in passwords:
            return user, passwords[user]
    return None, None


async def connect(
    url: str,
    *,
    name: str,
    user: str | None = None,
    password: str | None = None,
    on_reconnect: Callable[[], Awaitable[None]] | None = None,
    on_disconnect: Callable[[], Awaitable[None]] | None = None,
    connect_timeout: float = 5.0,
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
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 0.25,
        "allow_reconnect": True,
        "error_cb": error_cb,
        "reconnected_cb": reconnected_cb,
        "disconnected_cb": disconnected_cb,
        "pending_size": 64 * 1024 * 1024,
    }
    if user:
        options["user"] = user
        options["password"] = password
    return await nats.connect(**options)


async def provision_streams(
    js: JetStreamContext,
    subjects: Subjects = DEFAULT_SUBJECTS,
    *,
    duplicate_window: float = 600.0,
    replicas: int = 1,
) -> None:
    """Create or update every stream. Idempotent; every service runs it at start."""
    await _remove_legacy_streams(js, subjects)
    for spec in subjects.stream_specs():
        config = StreamConfig(
            name=spec.name,
            subjects=list(spec.subjects) or None,
            storage=StorageType.FILE,
            retention=RetentionPolicy.LIMITS,
            discard=DiscardPolicy.OLD,
            duplicate_window=duplicate_window,
            deny_delete=True,
            deny_purge=True,
            allow_direct=True,
            num_replicas=replicas,
        )
        try:
            await js.add_stream(config)
        except BadRequestError as exc:
            # Already there (perhaps created concurrently by another service): bring its config up to date.
            if exc.err_code not in (10058, 10065):  # stream name in use / subjects overlap
                raise
            await js.update_stream(config)


async def _remove_legacy_streams(js: JetStreamContext, subjects: Subjects) -> None:
    """Delete the per-owner streams of the earlier layout: their subjects now belong to the events stream.

    Nothing is lost: every event is in its owner's SQLite store, and the
    consumers' effects in theirs; the events stream starts empty and the
    durable consumers are created afresh on it.
    """
    for name in subjects.legacy_streams():
        try:
            await js.delete_stream(name)
        except NotFoundError:
            continue
        log.warning("removed the legacy stream %s (events now travel on %s)", name, subjects.events_stream)
