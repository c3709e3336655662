"""The idempotency key: ``<service>:<method>:<hash of the canonical arguments>``.

Canonical arguments are the JSON text with sorted keys and no whitespace, so
two proposals that differ only in key order or spacing get the same key. The
hash is SHA-256, the same digest the firewall binds approvals to (``args_hash``).
"""

from __future__ import annotations

from typing import Any

from overseer_events.canonical import args_hash

KEY_HASH_CHARS = 16


def idempotency_key(tool: str, args: dict[str, Any]) -> str:
    """``email.send`` + args → ``email:send:<first 16 hex digits of the args hash>``."""
    service, _, method = tool.partition(".")
    prefix = f"{service}:{method}" if method else service
    return f"{prefix}:{args_hash(args)[:KEY_HASH_CHARS]}"
