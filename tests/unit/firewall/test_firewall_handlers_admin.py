"""The firewall's commands and queries on in-memory ports: admin changes, modes, replay, prompt, audit pages."""

from __future__ import annotations

import pytest

from overseer_events.catalogue import Principal
from overseer_firewall.application.anchoring import AuditVerifier
from overseer_firewall.application.commands import FirewallCommands
from overseer_firewall.application.ports import Roots
from overseer_firewall.application.queries import FirewallQueries
from overseer_firewall.domain.policy import parse_admin_policy
from overseer_firewall.domain.prompt import PromptPolicy
from tests.fakes.firewall import InMemoryFirewall, InMemoryOutbox
from tests.unit.firewall.fw_kernel import CWD, SANDBOX, engine_for

ROOT = Principal(kind="admin", id="root")
MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}
CONFIRM_MAIL_TO_EXAMPLE = {
    "rules": [{"tool": "email.send", "recipients": ["*@example.com"], "level": "CONFIRM"}]
}


def commands(firewall: InMemoryFirewall) -> FirewallCommands:
    return FirewallCommands(firewall.firewall, firewall.in_unit, firewall.clock)


def queries(firewall: InMemoryFirewall) -> FirewallQueries:
    store = firewall.store
    return FirewallQueries(
        firewall.state,
        PromptPolicy(),
        Roots(sandbox=SANDBOX, cwd=CWD, home="/srv/overseer"),
        policy=store.policy,
        proposals=store.proposals,
        audit=store.audit,
        verifier=AuditVerifier(store.audit, firewall.published),
        escalations=store.approvals,
    )


async def test_a_new_admin_policy_is_the_next_version_recorded_audited_and_in_force() -> None:
    firewall = InMemoryFirewall(engine_for())
    version = await commands(firewall).replace_admin(parse_admin_policy(CONFIRM_MAIL_TO_EXAMPLE), ROOT)
    assert version == 2
    [replaced] = firewall.emitted("policy.admin_replaced")
    assert (replaced["version"], replaced["replaced_by"]) == (2, ROOT.model_dump())
    assert [r["change"] for r in firewall.audit_records()] == ["admin_replaced"]
    mail = firewall.propose("email.send", MAIL)
    assert firewall.verdict(mail)["level"] == "CONFIRM"


def test_a_change_that_may_loosen_the_firewall_takes_effect_only_once_committed() -> None:
    firewall = InMemoryFirewall(engine_for())
    outbox = InMemoryOutbox(firewall.store, firewall.clock, None)
    firewall.firewall.replace_admin(
        firewall.unit_for(outbox), parse_admin_policy(CONFIRM_MAIL_TO_EXAMPLE), ROOT
    )
    assert firewall.engine.policy.admin.version == 1  # rolled back, it must never have applied
    outbox.commit()
    assert firewall.engine.policy.admin.version == 2


async def test_a_delegated_agent_runs_inside_its_grant_and_is_held_outside_it() -> None:
    firewall = InMemoryFirewall(engine_for())
    admin = commands(firewall)
    setting = admin.mode_setting("delegated", {"tools": ["fs.write"], "max_steps": 1})
    await admin.set_mode("agent:helper", setting, ROOT)
    [mode] = firewall.emitted("policy.agent_mode_set")
    assert (mode["principal"], mode["mode"], mode["grant"]["tools"]) == (
        "agent:helper",
        "delegated",
        ["fs.write"],
    )
    helper = Principal(kind="agent", id="helper")
    inside = firewall.propose("fs.write", {"path": "a.md", "content": "x"}, proposer=helper)
    assert firewall.verdict(inside)["level"] == "AUTO"
    spent = firewall.propose("fs.write", {"path": "b.md", "content": "x"}, proposer=helper)
    assert firewall.verdict(spent)["decision"] == "hold"


def test_a_mode_that_does_not_validate_is_refused_before_anything_is_recorded() -> None:
    firewall = InMemoryFirewall(engine_for())
    with pytest.raises(ValueError, match="delegated mode needs a grant"):
        commands(firewall).mode_setting("delegated", None)
    with pytest.raises(ValueError, match="unknown mode"):
        commands(firewall).mode_setting("trusted", None)
    assert firewall.store.local == []


async def test_the_policy_answers_the_kernels_state_and_on_request_the_read_models_copy() -> None:
    firewall = InMemoryFirewall(engine_for())
    await commands(firewall).replace_admin(parse_admin_policy(CONFIRM_MAIL_TO_EXAMPLE), ROOT)
    mail = firewall.propose("email.send", MAIL)
    firewall.respond(mail, "abort", firewall.verdict(mail)["args_hash"])
    policy = await queries(firewall).policy(read_model=True)
    assert policy["admin"]["version"] == 2
    assert policy["sessions"] == {"session-1": {"paused": True, "aborts": 1}}
    assert policy["read_model"]["admin_version"] == 2
    assert policy["read_model"]["sessions"] == policy["sessions"]
    assert "read_model" not in await queries(firewall).policy()


async def test_a_replay_reports_which_recorded_verdicts_a_candidate_would_change_and_changes_nothing() -> (
    None
):
    firewall = InMemoryFirewall(engine_for())
    inside = firewall.propose("email.send", MAIL)
    firewall.propose("email.send", {**MAIL, "to": "eve@evil.test"})
    firewall.propose("fs.read", {"path": "a.md"})
    candidate = parse_admin_policy(
        {"rules": [{"tool": "email.send", "recipients": ["example.com"], "level": "NOTIFY"}]}
    )
    report = await queries(firewall).replay(candidate, 10)
    assert (report["current_version"], report["evaluated"]) == (1, 3)
    assert [(c["execution_id"], c["before"], c["after"]) for c in report["changed"]] == [
        (inside, {"level": "APPROVE", "decision": "hold"}, {"level": "NOTIFY", "decision": "allow"})
    ]
    assert firewall.emitted("policy.admin_replaced") == []


async def test_the_safety_prompt_names_each_tools_level_and_the_standing_hints() -> None:
    firewall = InMemoryFirewall(engine_for())
    for _ in range(3):
        write = firewall.propose("email.send", MAIL)
        firewall.respond(write, "reject", firewall.verdict(write)["args_hash"])
    answer = await queries(firewall).system_prompt()
    assert "```decision" in answer["prompt"]
    assert "email.send [APPROVE, irreversible]" in answer["prompt"]
    assert answer["confidence_floor"] == 0.4
    assert answer["constraints"] == [h["message"] for h in answer["hints"]]
    assert any("email.send" in c for c in answer["constraints"])


async def test_audit_pages_and_perception_counters_read_what_was_recorded() -> None:
    firewall = InMemoryFirewall(engine_for())
    mail = firewall.propose("email.send", MAIL)
    firewall.respond(mail, "approve", firewall.verdict(mail)["args_hash"])
    page = await queries(firewall).audit_page(1, 2)
    assert [(r["index"], r["record"]["kind"]) for r in page] == [(2, "verdict"), (3, "decision")]
    stats = queries(firewall).perception_stats()
    assert stats["tools"]["email.send"]["approvals"] == 1
    assert list(stats["approvers"]) == ["operator:alice"]


def test_an_llm_answer_without_a_readable_decision_requires_a_human() -> None:
    answer = queries(InMemoryFirewall(engine_for())).parse_decision("I would just send it.")
    assert (answer["human_required"], answer["source"]) == (True, "default")
    assert answer["problems"] == ["no decision found in the answer"]
