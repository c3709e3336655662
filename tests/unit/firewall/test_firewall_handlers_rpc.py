"""The firewall's RPC methods on in-memory ports: each request validated by its model before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from overseer_firewall.application.anchoring import AuditVerifier
from overseer_firewall.application.commands import FirewallCommands
from overseer_firewall.application.ports import Roots
from overseer_firewall.application.queries import FirewallQueries
from overseer_firewall.domain.prompt import PromptPolicy
from overseer_firewall.entrypoints.rpc import rpc
from overseer_runtime.partitions import Partition
from overseer_runtime.rpc import RpcError, RpcMethod
from tests.fakes.firewall import InMemoryFirewall
from tests.support.partitions import sessions_of_each_partition
from tests.unit.firewall.fw_kernel import CWD, SANDBOX, engine_for
from tests.unit.firewall.test_firewall_handlers_answers import held_mail

ROOT = {"kind": "admin", "id": "root"}


@dataclass
class Running:
    queries: FirewallQueries
    commands: FirewallCommands
    replay_limit: int
    partition: Partition = field(default_factory=Partition)


@pytest.fixture
def firewall() -> InMemoryFirewall:
    return InMemoryFirewall(engine_for())


@pytest.fixture
def methods(firewall: InMemoryFirewall) -> dict[str, RpcMethod]:
    return methods_of(firewall)


def methods_of(firewall: InMemoryFirewall, partition: Partition | None = None) -> dict[str, RpcMethod]:
    """The RPC methods of ``firewall``, running alone or as one ``partition`` of several."""
    store = firewall.store
    running = Running(
        queries=FirewallQueries(
            firewall.state,
            PromptPolicy(),
            Roots(sandbox=SANDBOX, cwd=CWD, home="/srv/overseer"),
            policy=store.policy,
            proposals=store.proposals,
            audit=store.audit,
            verifier=AuditVerifier(store.audit, firewall.published),
            escalations=store.approvals,
        ),
        commands=FirewallCommands(firewall.firewall, firewall.in_unit, firewall.clock),
        replay_limit=2,
        partition=partition or Partition(),
    )
    return dict(rpc(running).methods())


async def refused(methods: dict[str, RpcMethod], method: str, payload: dict[str, Any]) -> RpcError:
    with pytest.raises(RpcError) as refusal:
        await methods[method](payload)
    return refusal.value


def test_the_gateway_and_the_cli_find_every_method_under_its_name(methods: dict[str, RpcMethod]) -> None:
    assert sorted(methods) == [
        "agents.list",
        "approvals.escalated",
        "audit.list",
        "audit.verify",
        "catalogue.accept",
        "decision.parse",
        "perception.stats",
        "policy.get",
        "policy.replace_admin",
        "policy.replay",
        "policy.set_mode",
        "policy.told",
        "prompt.system",
        "session.cancel",
        "session.pause",
        "session.resume",
    ]


@pytest.mark.parametrize(
    "payload",
    [{"limit": 0}, {"limit": 1001}, {"limit": True}, {"limit": "10"}, {"after": -2}, {"after": 1.5}],
)
async def test_an_audit_page_outside_its_bounds_is_refused(
    methods: dict[str, RpcMethod], payload: dict[str, Any]
) -> None:
    assert (await refused(methods, "audit.list", payload)).status == 422


async def test_an_audit_page_starts_at_the_first_record_by_default(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    firewall.propose("fs.read", {"path": "a.md"})
    assert [r["index"] for r in await methods["audit.list"]({})] == [1, 2]
    assert [r["index"] for r in await methods["audit.list"]({"after": -1, "limit": 1})] == [1]


@pytest.mark.parametrize(
    ("payload", "where"),
    [
        ({"mode": "audited", "by": ROOT}, "principal"),
        ({"principal": "helper", "mode": "audited", "by": ROOT}, "agent principal"),
        ({"principal": "agent:helper", "mode": "delegated", "grant": ["fs.*"], "by": ROOT}, "grant"),
        ({"principal": "agent:helper", "mode": "audited", "by": "root"}, "by"),
        ({"principal": "agent:helper", "mode": "trusted", "by": ROOT}, "unknown mode"),
        (
            {"principal": "agent:helper", "mode": "delegated", "grant": {"tools": []}, "by": ROOT},
            "grant.tools",
        ),
    ],
)
async def test_a_mode_request_that_does_not_validate_is_refused_and_records_nothing(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall, payload: dict[str, Any], where: str
) -> None:
    refusal = await refused(methods, "policy.set_mode", payload)
    assert refusal.status == 422
    assert where in refusal.detail
    assert firewall.store.local == []


async def test_a_mode_set_answers_every_agents_mode(methods: dict[str, RpcMethod]) -> None:
    answer = await methods["policy.set_mode"]({"principal": "agent:helper", "mode": "audited", "by": ROOT})
    assert [(a["principal"], a["mode"]) for a in answer["agents"]] == [("agent:helper", "audited")]


async def test_an_admin_policy_that_does_not_validate_is_refused_with_every_problem(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    policy = {"defaults": {"fs.read": "MAYBE"}, "rules": [{"tool": "email.send"}]}
    refusal = await refused(methods, "policy.replace_admin", {"policy": policy, "principal": ROOT})
    assert refusal.status == 422
    assert "unknown permission level" in refusal.detail
    assert len(refusal.extra["problems"]) == 2
    assert firewall.store.local == []


@pytest.mark.parametrize(
    "payload",
    [
        {"policy": {}},
        {"policy": "CONFIRM everything", "principal": ROOT},
        {"policy": {}, "principal": {"kind": "admin"}},
    ],
)
async def test_an_admin_policy_request_of_the_wrong_shape_is_refused(
    methods: dict[str, RpcMethod], payload: dict[str, Any]
) -> None:
    assert (await refused(methods, "policy.replace_admin", payload)).status == 422


async def test_a_replaced_admin_policy_answers_the_policy_now_in_force(methods: dict[str, RpcMethod]) -> None:
    policy = {"defaults": {"fs.write": "CONFIRM"}}
    answer = await methods["policy.replace_admin"]({"policy": policy, "principal": ROOT})
    assert answer["admin"]["version"] == 2
    assert answer["tools"]["fs.write"]["admin"] == "CONFIRM"


async def test_how_far_the_policy_was_applied_is_told_by_aggregate_version(
    methods: dict[str, RpcMethod],
) -> None:
    assert await methods["policy.told"]({}) == {"policy": 0, "catalogue": 0}
    await methods["policy.replace_admin"]({"policy": {}, "principal": ROOT})
    await methods["policy.set_mode"]({"principal": "agent:helper", "mode": "audited", "by": ROOT})
    assert await methods["policy.told"]({}) == {"policy": 2, "catalogue": 0}


async def test_a_replica_refuses_another_replicas_audit_chain_and_sessions_with_404(
    firewall: InMemoryFirewall,
) -> None:
    second = methods_of(firewall, Partition(1, 2))
    refusal = await refused(second, "audit.list", {"chain": 0})
    assert (refusal.status, refusal.detail) == (
        404,
        "no audit chain 0 here: this firewall replica keeps chain 1",
    )
    assert await second["audit.list"]({"chain": 1}) == []
    assert (await second["audit.verify"]({}))["chain"] == 1
    theirs, mine = sessions_of_each_partition(1)
    assert (await refused(second, "session.pause", {"session_id": theirs, "by": ROOT})).status == 404
    assert (await second["session.pause"]({"session_id": mine, "by": ROOT}))["paused"] is True


async def test_a_replay_evaluates_the_configured_number_of_recent_proposals_unless_asked(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    for path in ("a.md", "b.md", "c.md"):
        firewall.propose("fs.read", {"path": path})
    assert (await methods["policy.replay"]({"policy": {}}))["evaluated"] == 2
    assert (await methods["policy.replay"]({"policy": {}, "limit": 3}))["evaluated"] == 3
    assert (await refused(methods, "policy.replay", {"policy": {}, "limit": True})).status == 422


async def test_an_llm_answer_must_be_text(methods: dict[str, RpcMethod]) -> None:
    assert (await refused(methods, "decision.parse", {"raw": 42})).status == 422
    assert (await methods["decision.parse"]({"raw": None}))["human_required"] is True


@pytest.mark.parametrize("method", ["audit.verify", "prompt.system", "perception.stats", "policy.get"])
async def test_a_request_naming_a_key_the_method_does_not_know_is_refused(
    methods: dict[str, RpcMethod], method: str
) -> None:
    assert (await refused(methods, method, {"verbose": True})).status == 422


# -- agents and the two-stage abort, asked by name ---------------------------------------------------
ALICE = {"kind": "operator", "id": "alice"}


async def test_the_agents_list_names_the_default_mode_for_agents_without_one(
    methods: dict[str, RpcMethod],
) -> None:
    assert await methods["agents.list"]({}) == {"default_mode": "supervised", "agents": []}
    await methods["policy.set_mode"]({"principal": "agent:helper", "mode": "audited", "by": ROOT})
    (helper,) = (await methods["agents.list"]({}))["agents"]
    assert (helper["principal"], helper["mode"]) == ("agent:helper", "audited")


async def test_a_paused_session_holds_its_next_auto_proposal_and_the_pause_is_audited(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    answer = await methods["session.pause"]({"session_id": "s-1", "by": ALICE, "reason": "look first"})
    assert answer == {"session_id": "s-1", "paused": True, "aborts": 1, "changed": True}
    assert firewall.emitted("firewall.session_paused", session_id="s-1", reason="look first") != []
    execution_id = firewall.propose("fs.list", {"path": "."}, session_id="s-1")
    assert firewall.verdict(execution_id)["decision"] == "hold"
    records = firewall.audit_records()
    (paused,) = [r for r in records if r["kind"] == "session"]
    assert (paused["action"], paused["session_id"], paused["by"]) == ("paused", "s-1", "operator:alice")


async def test_pausing_a_paused_session_records_nothing(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    await methods["session.pause"]({"session_id": "s-1", "by": ALICE})
    recorded = len(firewall.store.local)
    again = await methods["session.pause"]({"session_id": "s-1", "by": ALICE})
    assert again["changed"] is False
    assert len(firewall.store.local) == recorded


@pytest.mark.parametrize("method", ["session.cancel", "session.resume"])
async def test_cancelling_or_resuming_a_session_that_is_not_paused_is_a_conflict(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall, method: str
) -> None:
    refusal = await refused(methods, method, {"session_id": "s-1", "by": ALICE})
    assert refusal.status == 409
    assert "is not paused" in refusal.detail
    assert firewall.store.local == []


async def test_a_cancel_after_the_pause_is_requested_and_the_session_stays_paused(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    await methods["session.pause"]({"session_id": "s-1", "by": ALICE})
    answer = await methods["session.cancel"]({"session_id": "s-1", "by": ALICE, "reason": "stop"})
    assert answer == {"session_id": "s-1", "paused": True, "aborts": 2, "changed": True}
    (requested,) = firewall.emitted("firewall.session_cancel_requested", session_id="s-1")
    assert requested["by"] == ALICE
    assert requested["reason"] == "stop"


async def test_a_resumed_session_is_judged_as_usual_again(
    methods: dict[str, RpcMethod], firewall: InMemoryFirewall
) -> None:
    await methods["session.pause"]({"session_id": "s-1", "by": ALICE})
    answer = await methods["session.resume"]({"session_id": "s-1", "by": ALICE})
    assert answer == {"session_id": "s-1", "paused": False, "aborts": 0, "changed": True}
    execution_id = firewall.propose("fs.list", {"path": "."}, session_id="s-1")
    assert firewall.verdict(execution_id)["decision"] == "allow"


@pytest.mark.parametrize(
    "payload",
    [
        {"session_id": "s-1"},
        {"session_id": "", "by": ALICE},
        {"session_id": "s-1", "by": ALICE, "reason": "x" * 501},
        {"session_id": 7, "by": ALICE},
    ],
)
async def test_a_session_control_of_the_wrong_shape_is_refused(
    methods: dict[str, RpcMethod], payload: dict[str, Any]
) -> None:
    assert (await refused(methods, "session.pause", payload)).status == 422


async def test_escalated_approvals_are_named_until_someone_answers_them(
    firewall: InMemoryFirewall, methods: dict[str, RpcMethod]
) -> None:
    mail, args_hash = held_mail(firewall)  # APPROVE: escalated to an admin after 1800 s
    assert await methods["approvals.escalated"]({}) == {"to_role": "admin", "execution_ids": []}

    firewall.clock.advance(1801)
    firewall.run(firewall.firewall.check_timeouts)
    assert await methods["approvals.escalated"]({}) == {"to_role": "admin", "execution_ids": [mail]}

    firewall.respond(mail, "approve", args_hash)
    assert await methods["approvals.escalated"]({}) == {"to_role": "admin", "execution_ids": []}


async def test_accepting_a_tool_change_when_none_waits_is_refused_as_a_conflict(
    methods: dict[str, RpcMethod],
) -> None:
    refusal = await refused(
        methods, "catalogue.accept", {"tool": "git.git_log", "by": {"kind": "admin", "id": "ada"}}
    )
    assert refusal.status == 409
    assert "no change waiting" in str(refusal)
