"""Which held calls reach which approval channel: the ``[[notify]]`` routes of the admin policy.

A route names a channel (a webhook or a mail list the gateway's ``[channels]`` configuration
defines) and narrows what goes to it: permission levels, tool name globs, session id globs, and
which notices — ``held`` (a call waits for a person) and ``escalated`` (nobody answered in time:
the decider of last resort hands it to an admin). An empty list means "any". The firewall
validates the routes with the rest of the admin policy; the gateway, which sends the notices,
reads them from the policy event.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict

from overseer_events.catalogue import NoticeKind, PermissionLevel
from overseer_events.policy_fields import NonEmpty, Strings, listed

LEVELS: tuple[str, ...] = get_args(PermissionLevel)


def _level_name(value: Any) -> Any:
    text = str(value).upper()
    if text not in LEVELS:
        raise ValueError(f"{value!r} is not a level (one of {', '.join(LEVELS)})")
    return text


class NoticeRoute(BaseModel):
    """One ``[[notify]]`` entry: send these notices of these calls to ``channel``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: NonEmpty
    on: Annotated[tuple[NoticeKind, ...], BeforeValidator(listed)] = ("held",)
    levels: Annotated[tuple[Annotated[str, BeforeValidator(_level_name)], ...], BeforeValidator(listed)] = ()
    tools: Strings = ()
    sessions: Strings = ()

    def matches(self, notice: NoticeKind, *, level: str | None, tool: str | None, session_id: str) -> bool:
        """Whether a ``notice`` about a call of ``tool`` at ``level`` in ``session_id`` goes to this route."""
        if notice not in self.on:
            return False
        if self.levels and (level or "CONFIRM") not in self.levels:
            return False
        if self.tools and not any(fnmatch.fnmatchcase(tool or "", glob) for glob in self.tools):
            return False
        return not self.sessions or any(fnmatch.fnmatchcase(session_id, glob) for glob in self.sessions)


def parse_routes(raw: Iterable[Mapping[str, Any]] | None) -> tuple[NoticeRoute, ...]:
    """The routes of a policy document's ``notify`` list (validated; raises pydantic's ValidationError)."""
    return tuple(NoticeRoute.model_validate(entry) for entry in raw or ())


def channels_for(
    routes: Sequence[NoticeRoute], notice: NoticeKind, *, level: str | None, tool: str | None, session_id: str
) -> list[str]:
    """The channels a notice goes to, each once, in the order the routes name them."""
    found: list[str] = []
    for route in routes:
        if route.channel not in found and route.matches(
            notice, level=level, tool=tool, session_id=session_id
        ):
            found.append(route.channel)
    return found
