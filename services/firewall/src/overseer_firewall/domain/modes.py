"""Agent modes: how much the firewall trusts one agent principal.

* **supervised** (default): every call is judged and held as its level says.
* **delegated**: a grant — a tool whitelist plus a budget of steps and time, and of tool calls and
  model tokens per session (past those, the session's next call is held).
  Inside it a call is AUTO (admin deny rules still apply, and an irreversible
  tool must be named exactly, never granted through a glob); outside it, held.
* **audited**: the agent is never made to wait; calls that would have been
  held or denied raise ``firewall.alert`` (schema and sandbox denials still stand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from overseer_firewall.domain.budgets import SessionBudget
from overseer_firewall.domain.policy import Matcher, glob_matcher


class AgentMode(StrEnum):
    SUPERVISED = "supervised"
    DELEGATED = "delegated"
    AUDITED = "audited"


@dataclass(frozen=True, slots=True)
class Grant:
    tools: tuple[str, ...]
    max_steps: int | None = None
    expires_at: float | None = None
    granted_at: float = 0.0
    session: SessionBudget = field(default_factory=SessionBudget)  # per session: tool calls, model tokens
    _matchers: tuple[Matcher, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_matchers", tuple(glob_matcher(t) for t in self.tools))

    def covers(self, tool: str, irreversible: bool) -> bool:
        if irreversible:
            return tool in self.tools
        return any(m(tool) is not None for m in self._matchers)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tools": list(self.tools),
            "max_steps": self.max_steps,
            "expires_at": self.expires_at,
            "granted_at": self.granted_at,
            "max_session_calls": self.session.calls,
            "max_session_tokens": self.session.tokens,
        }


@dataclass(frozen=True, slots=True)
class ModeSetting:
    mode: AgentMode = AgentMode.SUPERVISED
    grant: Grant | None = None


@dataclass(frozen=True, slots=True)
class ModeJudgement:
    mode: AgentMode
    inside_grant: bool = False
    reason: str = ""


SUPERVISED = ModeJudgement(AgentMode.SUPERVISED)
_DEFAULT_SETTING = ModeSetting()


def parse_mode(mode: str, grant: Mapping[str, Any] | None, now: float) -> ModeSetting:
    """Validate an ``agents.set_mode`` request; raises ``ValueError`` with the reason."""
    try:
        parsed = AgentMode(mode)
    except ValueError:
        raise ValueError(f"unknown mode {mode!r} (supervised, delegated, audited)") from None
    if parsed is not AgentMode.DELEGATED:
        return ModeSetting(parsed)
    if not grant:
        raise ValueError(
            "delegated mode needs a grant: {tools, max_steps?, seconds?, max_session_calls?, max_session_tokens?}"
        )
    tools = grant.get("tools")
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
        raise ValueError("grant.tools must be a non-empty list of tool names or globs")
    max_steps, calls, tokens = (
        _positive(grant, key) for key in ("max_steps", "max_session_calls", "max_session_tokens")
    )
    seconds = grant.get("seconds")
    if seconds is not None and (
        not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0
    ):
        raise ValueError("grant.seconds must be a positive number")
    expires = grant.get("expires_at")
    if seconds is not None:
        expires = now + float(seconds)
    expires_at = float(expires) if expires is not None else None
    return ModeSetting(parsed, Grant(tuple(tools), max_steps, expires_at, now, SessionBudget(calls, tokens)))


def _positive(grant: Mapping[str, Any], key: str) -> int | None:
    value = grant.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"grant.{key} must be a positive integer")
    return value


class AgentModes:
    """Principal → mode, plus the steps each delegated principal has used of its grant.

    A firewall running as several replicas judges a delegated agent's sessions wherever they land and
    counts its steps where it judges them, so each replica allows its share of a grant's ``max_steps``
    (:meth:`share_out`): together never more than the grant, and a call beyond a replica's share is
    held for a person (fail closed)."""

    __slots__ = ("_count", "_index", "_settings", "_steps")

    def __init__(self) -> None:
        self._settings: dict[str, ModeSetting] = {}
        self._steps: dict[str, int] = {}
        self._index, self._count = 0, 1

    def share_out(self, index: int, count: int) -> None:
        """Judge as replica ``index`` of ``count``: allow that replica's share of each grant's steps."""
        self._index, self._count = index, count

    def step_limit(self, max_steps: int) -> int:
        """This replica's share of ``max_steps``: the whole alone, else a part (the first get one more)."""
        return max_steps // self._count + (1 if self._index < max_steps % self._count else 0)

    def set(self, principal: str, setting: ModeSetting) -> None:
        self._settings[principal] = setting
        self._steps[principal] = 0

    def setting(self, principal: str) -> ModeSetting:
        return self._settings.get(principal, _DEFAULT_SETTING)

    def steps_used(self, principal: str) -> int:
        return self._steps.get(principal, 0)

    def count_step(self, principal: str, at: float) -> None:
        setting = self._settings.get(principal)
        if setting is not None and setting.grant is not None and at >= setting.grant.granted_at:
            self._steps[principal] = self._steps.get(principal, 0) + 1

    def judge(self, principal: str, tool: str, irreversible: bool, now: float) -> ModeJudgement:
        setting = self._settings.get(principal)
        if setting is None or setting.mode is AgentMode.SUPERVISED:
            return SUPERVISED
        if setting.mode is AgentMode.AUDITED:
            return ModeJudgement(AgentMode.AUDITED)
        grant = setting.grant
        assert grant is not None
        if not grant.covers(tool, irreversible):
            return ModeJudgement(AgentMode.DELEGATED, False, f"{tool} is outside the grant of {principal}")
        if grant.expires_at is not None and now >= grant.expires_at:
            return ModeJudgement(AgentMode.DELEGATED, False, f"the grant of {principal} has expired")
        if grant.max_steps is not None and self.steps_used(principal) >= self.step_limit(grant.max_steps):
            share = (
                ""
                if self._count == 1
                else f" (this firewall replica's share: {self.step_limit(grant.max_steps)})"
            )
            return ModeJudgement(
                AgentMode.DELEGATED,
                False,
                f"the grant of {principal} has used its {grant.max_steps} steps{share}",
            )
        return ModeJudgement(AgentMode.DELEGATED, True, f"inside the grant of {principal}")

    def describe(self) -> list[dict[str, Any]]:
        return [
            {
                "principal": principal,
                "mode": setting.mode.value,
                "grant": setting.grant.as_dict() if setting.grant else None,
                "steps_used": self.steps_used(principal),
            }
            for principal, setting in sorted(self._settings.items())
        ]
