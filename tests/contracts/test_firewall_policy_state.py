"""PolicyState's contract, held by the in-memory fake and by the SQLite reader: what the kernel loads at start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    AnnouncedTool,
    CatalogueChanged,
    ExecutionProposed,
    HintIssued,
    PathGranted,
    Principal,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_firewall.application.ports import PolicyRows, RecordedCatalogue
from overseer_firewall.domain.budgets import Usage
from overseer_firewall.domain.gate import SessionState
from overseer_firewall.domain.grants import PathGrant
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.modes import AgentMode, Grant, ModeSetting
from overseer_firewall.domain.policy import UserLevel
from tests.contracts.firewall_backends import ALICE, BACKENDS, ROOT, FirewallBackend, make_backend


@pytest.fixture(params=BACKENDS)
async def firewall(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[FirewallBackend]:
    backend = make_backend(request.param, tmp_path)
    yield backend
    await backend.close()


def escalated(
    tool: str, before: str | None, after: str | None, trigger: str = "3 rejections"
) -> UserLevelChanged:
    return UserLevelChanged(tool=tool, before=before, after=after, trigger=trigger, hint=f"{tool}: {trigger}")


async def test_an_empty_store_holds_no_policy_state(firewall: FirewallBackend) -> None:
    policy = await firewall.policy_state()
    assert await policy.rows() == PolicyRows(None, None, 0, {}, {}, {})
    assert await policy.hints() == []


async def test_the_latest_admin_policy_version_is_the_one_in_force(firewall: FirewallBackend) -> None:
    first = {"defaults": {"fs.write": "CONFIRM"}}
    second = {"defaults": {"fs.write": "APPROVE"}, "rules": [{"tool": "email.send", "level": "CONFIRM"}]}
    firewall.apply(AdminPolicyReplaced(version=1, policy=first, replaced_by=ROOT), aggregate_id="policy")
    firewall.apply(
        AdminPolicyReplaced(version=2, policy=second, replaced_by=ROOT), aggregate_id="policy", version=2
    )
    rows = await (await firewall.policy_state()).rows()
    assert (rows.admin_version, rows.admin_policy) == (2, second)


async def test_a_user_level_keeps_the_level_before_its_first_escalation_until_it_relaxes(
    firewall: FirewallBackend,
) -> None:
    changes = [
        escalated("fs.write", None, "CONFIRM", "first"),
        escalated("fs.write", "CONFIRM", "APPROVE", "second"),
        escalated("email.send", "APPROVE", "CONFIRM", "relaxed at once"),
    ]
    for version, change in enumerate(changes, start=1):
        firewall.apply(change, aggregate_id="policy", version=version)
    rows = await (await firewall.policy_state()).rows()
    assert rows.user_version == 3
    assert rows.user_levels == {
        "fs.write": UserLevel(Level.APPROVE, None, "second", "fs.write: second"),
        "email.send": UserLevel(
            Level.CONFIRM, Level.APPROVE, "relaxed at once", "email.send: relaxed at once"
        ),
    }


async def test_an_escalation_above_the_current_level_keeps_its_previous_level(
    firewall: FirewallBackend,
) -> None:
    firewall.apply(escalated("fs.write", "NOTIFY", "CONFIRM"), aggregate_id="policy")
    firewall.apply(escalated("fs.write", "CONFIRM", "APPROVE"), aggregate_id="policy", version=2)
    firewall.apply(escalated("fs.write", "APPROVE", "CONFIRM"), aggregate_id="policy", version=3)
    rows = await (await firewall.policy_state()).rows()
    assert rows.user_levels["fs.write"].level is Level.CONFIRM
    assert rows.user_levels["fs.write"].previous is None


async def test_an_escalation_from_auto_remembers_auto(firewall: FirewallBackend) -> None:
    firewall.apply(escalated("fs.read", "AUTO", "NOTIFY"), aggregate_id="policy")
    firewall.apply(escalated("fs.read", "NOTIFY", "CONFIRM"), aggregate_id="policy", version=2)
    rows = await (await firewall.policy_state()).rows()
    assert rows.user_levels["fs.read"].previous is Level.AUTO


async def test_a_user_level_relaxed_to_nothing_is_gone_but_counted(firewall: FirewallBackend) -> None:
    firewall.apply(escalated("fs.write", None, "APPROVE"), aggregate_id="policy")
    firewall.apply(escalated("fs.write", "APPROVE", None, "relaxed"), aggregate_id="policy", version=2)
    rows = await (await firewall.policy_state()).rows()
    assert (rows.user_levels, rows.user_version) == ({}, 2)


async def test_agent_modes_read_back_with_their_grants(firewall: FirewallBackend) -> None:
    grant = {"tools": ["fs.*"], "max_steps": 3, "expires_at": 2_000.0, "granted_at": 1_000.0}
    firewall.apply(
        AgentModeSet(principal="agent:helper", mode="delegated", grant=grant, set_by=ROOT),
        aggregate_id="policy",
    )
    firewall.apply(
        AgentModeSet(principal="agent:bot", mode="audited", set_by=ROOT), aggregate_id="policy", version=2
    )
    rows = await (await firewall.policy_state()).rows()
    assert rows.modes == {
        "agent:helper": ModeSetting(AgentMode.DELEGATED, Grant(("fs.*",), 3, 2_000.0, 1_000.0)),
        "agent:bot": ModeSetting(AgentMode.AUDITED),
    }


async def test_a_session_is_paused_by_an_abort_cancelled_by_the_next_and_forgotten_when_resumed(
    firewall: FirewallBackend,
) -> None:
    firewall.apply(SessionPaused(session_id="s-1", by=ALICE), aggregate_id="session:s-1")
    firewall.apply(SessionPaused(session_id="s-1", by=ALICE), aggregate_id="session:s-1", version=2)
    firewall.apply(SessionCancelRequested(session_id="s-1", by=ALICE), aggregate_id="session:s-1", version=3)
    firewall.apply(SessionCancelRequested(session_id="s-2", by=ALICE), aggregate_id="session:s-2")
    firewall.apply(SessionPaused(session_id="s-3", by=ALICE), aggregate_id="session:s-3")
    firewall.apply(SessionResumed(session_id="s-3", by=ALICE), aggregate_id="session:s-3", version=2)
    rows = await (await firewall.policy_state()).rows()
    assert rows.sessions == {"s-1": SessionState(True, 2), "s-2": SessionState(True, 1)}


async def test_one_hint_stands_per_tool_and_kind_the_latest_oldest_first(firewall: FirewallBackend) -> None:
    for version, (tool, kind, message) in enumerate(
        [("fs.write", "avoid", "first"), ("email.send", "avoid", "mail"), ("fs.write", "avoid", "again")],
        start=1,
    ):
        firewall.apply(
            HintIssued(tool=tool, kind=kind, message=message), aggregate_id="hints", version=version
        )
    hints = await (await firewall.policy_state()).hints()
    assert [(h["tool"], h["kind"], h["message"]) for h in hints] == [
        ("email.send", "avoid", "mail"),
        ("fs.write", "avoid", "again"),
    ]
    assert hints[0]["at"] < hints[1]["at"]


async def test_path_grants_read_back_in_the_order_recorded_each_request_once(
    firewall: FirewallBackend,
) -> None:
    def granted(request_id: str, path: str, session_id: str = "s-1", tool: str = "fs.read") -> PathGranted:
        return PathGranted(
            session_id=session_id, tool=tool, path=path, request_id=request_id, granted_by=ALICE
        )

    assert firewall.grants.granted("ask-1") is False
    firewall.apply(granted("ask-1", "/home/alice/q3.txt"), aggregate_id="grant:ask-1")
    firewall.apply(granted("ask-2", "/srv/shared", "s-2", "fs.list"), aggregate_id="grant:ask-2")
    assert firewall.grants.granted("ask-1") is True
    assert firewall.grants.granted("ask-3") is False
    rows = await (await firewall.policy_state()).rows()
    assert rows.grants == (
        PathGrant("s-1", "fs.read", "/home/alice/q3.txt", "ask-1", "operator:alice"),
        PathGrant("s-2", "fs.list", "/srv/shared", "ask-2", "operator:alice"),
    )
    assert rows.as_dict()["grants"] == {
        "s-1": [
            {
                "tool": "fs.read",
                "path": "/home/alice/q3.txt",
                "request_id": "ask-1",
                "granted_by": "operator:alice",
            }
        ],
        "s-2": [
            {"tool": "fs.list", "path": "/srv/shared", "request_id": "ask-2", "granted_by": "operator:alice"}
        ],
    }


async def test_the_latest_catalogue_and_the_tools_withdrawn_are_what_the_kernel_loads(
    firewall: FirewallBackend,
) -> None:
    git = [
        AnnouncedTool(name="git.git_log", source="mcp:git", read_only=True, input_schema={"type": "object"})
    ]
    assert firewall.tools.current() == RecordedCatalogue()
    firewall.apply(CatalogueChanged(tools=git, added=["git.git_log"]), aggregate_id="catalogue")
    withdrawn = {"git.git_reset": "mcp:git no longer offers it (the server was removed)"}
    firewall.apply(CatalogueChanged(tools=git, withdrawn=withdrawn), aggregate_id="catalogue", version=2)
    rows = await (await firewall.policy_state()).rows()
    assert (rows.catalogue, rows.withdrawn) == (git, withdrawn)
    assert firewall.tools.current() == RecordedCatalogue(git, withdrawn)


async def test_what_an_admin_accepted_and_the_tools_changed_since_are_kept_and_an_acceptance_clears_one(
    firewall: FirewallBackend,
) -> None:
    git = [
        AnnouncedTool(name="git.git_log", source="mcp:git"),
        AnnouncedTool(name="git.git_add", source="mcp:git"),
    ]
    accepted = {"git.git_log": "f1", "git.git_add": "f2"}
    unreviewed = {"git.git_log": "description", "git.git_add": "hints"}
    firewall.apply(
        CatalogueChanged(tools=git, accepted=accepted, unreviewed=unreviewed), aggregate_id="catalogue"
    )
    assert firewall.tools.current() == RecordedCatalogue(git, {}, accepted, unreviewed)
    by = Principal(kind="admin", id="ada")
    firewall.apply(
        ToolChangeAccepted(tool="git.git_log", fingerprint="f3", accepted_by=by),
        aggregate_id="catalogue",
        version=2,
    )
    after = firewall.tools.current()
    assert (after.accepted, after.unreviewed) == (
        {"git.git_log": "f3", "git.git_add": "f2"},
        {"git.git_add": "hints"},
    )
    rows = await (await firewall.policy_state()).rows()
    assert rows.unreviewed == {"git.git_add": "hints"}


async def test_each_session_s_judged_calls_and_the_most_tokens_its_agent_said_are_what_the_kernel_loads(
    firewall: FirewallBackend,
) -> None:
    agent = Principal(kind="agent", id="agent")
    for n, tokens in enumerate((120, 900, 400)):
        firewall.apply(
            ExecutionProposed(
                execution_id=f"e{n}", session_id="s1", tool="fs.read", proposer=agent, model_tokens=tokens
            )
        )
        firewall.apply(
            VerdictIssued(
                execution_id=f"e{n}",
                session_id="s1",
                tool="fs.read",
                level="AUTO",
                decision="allow",
                args_hash="h",
            ),
            aggregate_id=f"verdict:e{n}",
        )
    firewall.apply(
        VerdictIssued(
            execution_id="q", session_id="s2", tool=None, level="CONFIRM", decision="hold", args_hash="h"
        ),
        aggregate_id="verdict:q",
    )  # a question for a person is no tool call
    rows = await (await firewall.policy_state()).rows()
    assert rows.usage == {"s1": Usage(3, 900)}
