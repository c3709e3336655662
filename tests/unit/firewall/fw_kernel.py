"""Pure-kernel helpers: an engine over a sandbox path, proposals with sensible defaults."""

from __future__ import annotations

import itertools
import tomllib
from typing import Any

from overseer_firewall.bootstrap import DEFAULT_POLICY_FILE
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.model import Proposal
from overseer_firewall.domain.policy import AdminPolicy, PolicyStore, parse_admin_policy

SANDBOX = "/srv/overseer/sandbox"
CWD = "/srv/work"

_ids = itertools.count(1)


def default_admin(version: int = 1) -> AdminPolicy:
    return parse_admin_policy(tomllib.loads(DEFAULT_POLICY_FILE.read_text(encoding="utf-8")), version=version)


def admin_from(text: str, version: int = 1) -> AdminPolicy:
    return parse_admin_policy(tomllib.loads(text), version=version)


def proposal(tool: str | None = "fs.read", args: dict[str, Any] | None = None, **fields: Any) -> Proposal:
    defaults: dict[str, Any] = {
        "execution_id": f"exec-{next(_ids)}",
        "session_id": "session-1",
        "tool": tool,
        "args": {"path": "notes.txt"} if args is None and tool == "fs.read" else (args or {}),
        "proposer": "agent:agent",
        "occurred_at": 1_000.0,
    }
    defaults.update(fields)
    return Proposal(**defaults)


def engine_for(admin: AdminPolicy | None = None, **kwargs: Any) -> FirewallEngine:
    return FirewallEngine(
        PolicyStore(admin or default_admin()), sandbox_root=SANDBOX, cwd=CWD, home="/srv/overseer", **kwargs
    )
