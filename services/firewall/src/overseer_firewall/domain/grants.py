"""Session path grants: the paths people let the agent read outside the readable paths, per session.

A person grants one by answering the agent's permission request (``conversation.answer_received``
with a grant); the firewall records it as ``policy.path_granted`` and folds it in here. The
sandbox layer (L4) then lets a read at or below a granted path pass without a CONFIRM, in that
session only, for the tools the grant covers (:mod:`overseer_events.grants`: a grant for
``fs.read`` covers ``fs.list`` too). Writes are never granted: only read tools can be.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from overseer_events.answers import authorises
from overseer_events.grants import covers, grant_root, grantable
from overseer_firewall.domain.paths import within

AGENT_KIND = "agent"


@dataclass(frozen=True, slots=True)
class PathGrant:
    """One grant as recorded: ``path`` is absolute and normalised."""

    session_id: str
    tool: str
    path: str
    request_id: str
    granted_by: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "path": self.path,
            "request_id": self.request_id,
            "granted_by": self.granted_by,
        }


@dataclass(frozen=True, slots=True)
class GrantRequest:
    """What a person's answer asks the firewall to grant, before it is judged."""

    session_id: str
    tool: str
    path: str
    request_id: str
    answer: str
    responder_kind: str


class GrantRefused(ValueError):
    """A grant the firewall does not record, and why."""


def judge_grant(request: GrantRequest, sandbox_root: str) -> str:
    """The grant's absolute path, or raises :class:`GrantRefused` saying why it is not recorded."""
    if not grantable(request.tool):
        raise GrantRefused(f"{request.tool} cannot be granted: only reads (fs.read, fs.list) can")
    if request.responder_kind == AGENT_KIND:
        raise GrantRefused("an agent cannot grant itself a path")
    if not authorises(request.answer):
        raise GrantRefused(f"the answer {request.answer[:100]!r} does not authorise the grant")
    root = grant_root(request.path, sandbox_root)
    if root is None:
        raise GrantRefused(f"{request.path[:200]!r} is not a path that can be granted")
    return root


class SessionGrants:
    """Every recorded grant, by session; the sandbox layer asks which granted path covers a read."""

    __slots__ = ("_by_session",)

    def __init__(self, grants: Iterable[PathGrant] = ()) -> None:
        self._by_session: dict[str, list[PathGrant]] = {}
        for grant in grants:
            self.add(grant)

    def add(self, grant: PathGrant) -> None:
        granted = self._by_session.setdefault(grant.session_id, [])
        if grant not in granted:
            granted.append(grant)

    def root_for(self, session_id: str, tool: str, target: str) -> str | None:
        """The granted path at or above the absolute, normalised ``target`` for ``tool`` in the session."""
        for grant in self._by_session.get(session_id, ()):
            if covers(grant.tool, tool) and within(target, grant.path):
                return grant.path
        return None

    def describe(self) -> dict[str, list[dict[str, Any]]]:
        """``GET /v1/policy``'s ``grants``: per session, its grants in path order."""
        return {
            session: [g.as_dict() for g in sorted(grants, key=lambda g: (g.path, g.tool, g.request_id))]
            for session, grants in sorted(self._by_session.items())
        }

    def __len__(self) -> int:
        return sum(len(grants) for grants in self._by_session.values())
