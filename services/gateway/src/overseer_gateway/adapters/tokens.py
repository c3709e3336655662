"""Bearer tokens: ``OVERSEER_HOME/tokens.json`` plus principals named in the configuration.

``tokens.json`` is ``{"admin": "…", "operator": "…", "agent": "…", "viewer": "…"}``:
the key is both the role and the principal's name. ``[gateway.principals]``
in the configuration adds named people, e.g.::

    [gateway.principals.alice]
    role = "operator"
    token = "…"

Lookups compare the presented token with every known token in constant time
(``hmac.compare_digest``) and never stop early, so timing reveals neither which
token nor how much of it matched.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.settings import PrincipalSettings

TOKENS_FILE = "tokens.json"


def tokens_path(home: Path) -> Path:
    return Path(home) / TOKENS_FILE


def ensure_tokens_file(home: Path) -> dict[str, str]:
    """Read ``tokens.json`` under ``home``, writing fresh random dev tokens (mode 0600) if it is missing."""
    path = tokens_path(home)
    if path.is_file():
        return dict(json.loads(path.read_text(encoding="utf-8")))
    tokens = {
        role.value: secrets.token_urlsafe(32) for role in (Role.ADMIN, Role.OPERATOR, Role.AGENT, Role.VIEWER)
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: a world-readable window between write and chmod would leak them.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(tokens, out, indent=2)
    except FileExistsError:  # pragma: no cover - written concurrently by `overseer up`; theirs wins
        return dict(json.loads(path.read_text(encoding="utf-8")))
    return tokens


class TokenRegistry:
    """token -> :class:`Caller` (:class:`~overseer_gateway.application.ports.Callers`)."""

    def __init__(self, entries: list[tuple[bytes, Caller]]) -> None:
        self._entries = entries

    @classmethod
    def from_sources(
        cls, tokens: Mapping[str, str], principals: Mapping[str, PrincipalSettings] | None = None
    ) -> TokenRegistry:
        """The role tokens of ``tokens.json`` (a key that is no role is ignored) and the named principals."""
        entries: list[tuple[bytes, Caller]] = []
        for role_name, token in tokens.items():
            if role_name in Role.__members__.values() and token:
                entries.append((str(token).encode(), Caller(name=role_name, role=Role(role_name))))
        for name, principal in (principals or {}).items():
            entries.append((principal.token.encode(), Caller(name=name, role=principal.role)))
        return cls(entries)

    @classmethod
    def load(cls, home: Path, tokens_file: str, principals: Mapping[str, PrincipalSettings]) -> TokenRegistry:
        """``tokens_file`` (empty: ``tokens.json`` under ``home``, written when missing) and ``principals``."""
        path = Path(tokens_file) if tokens_file else tokens_path(home)
        tokens = ensure_tokens_file(path.parent) if path.name == TOKENS_FILE else json.loads(path.read_text())
        return cls.from_sources(tokens, principals)

    def named(self, name: str) -> Caller | None:
        """The principal called ``name`` (a role token's name is its role), None when there is none."""
        return next((caller for _, caller in self._entries if caller.name == name), None)

    def identify(self, presented: str | None) -> Caller | None:
        if not presented:
            return None
        candidate = presented.encode()
        found: Caller | None = None
        for token, caller in self._entries:
            if hmac.compare_digest(token, candidate) and found is None:
                found = caller
        return found
