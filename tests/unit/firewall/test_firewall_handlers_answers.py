"""FirewallHandlers on in-memory ports: a person's answers, aborts, reconciliations, adaptation, timeouts."""

from __future__ import annotations

import pytest

from overseer_events.errors import TransientError
from overseer_firewall.application.state import ABORT_COMMENT
from overseer_firewall.domain.gate import PendingStatus
from overseer_firewall.domain.levels import Level
from tests.contracts.firewall_backends import suspended
from tests.fakes.firewall import AGENT, OPERATOR, InMemoryFirewall
from tests.unit.firewall.fw_kernel import admin_from, engine_for

MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}
HELD_WRITES = '[defaults]\n"fs.write" = "CONFIRM"\n'


def held_mail(firewall: InMemoryFirewall, session_id: str = "session-1") -> tuple[str, str]:
    mail = firewall.propose("email.send", MAIL, session_id=session_id)
    return mail, firewall.verdict(mail)["args_hash"]


def refusals(firewall: InMemoryFirewall, execution_id: str) -> list[tuple[int, str]]:
    return [
        (r["status"], r["reason"])
        for r in firewall.emitted("firewall.response_refused", execution_id=execution_id)
    ]


def test_an_approval_binds_to_its_arguments_is_never_self_given_and_counts_once() -> None:
    firewall = InMemoryFirewall(engine_for())
    mail, args_hash = held_mail(firewall)

    firewall.respond(mail, "approve", "f" * 64)
    firewall.respond(mail, "批准", args_hash, responder=AGENT)
    assert [status for status, _ in refusals(firewall, mail)] == [409, 403]
    assert "args_hash" in refusals(firewall, mail)[0][1]
    assert firewall.emitted("human.decision_recorded") == []

    firewall.respond(mail, "批准", args_hash)
    [decision] = firewall.emitted("human.decision_recorded", execution_id=mail)
    assert (decision["decision"], decision["args_hash"], decision["decided_by"]) == (
        "approve",
        args_hash,
        OPERATOR.model_dump(),
    )
    request = firewall.store.approvals.get(mail)
    assert request is not None
    assert request.status is PendingStatus.DECIDED

    firewall.respond(mail, "approve", args_hash)  # the same answer, replayed
    assert [status for status, _ in refusals(firewall, mail)] == [409, 403, 409]
    assert len(firewall.emitted("human.decision_recorded", execution_id=mail)) == 1
    assert [r["kind"] for r in firewall.audit_records()].count("refusal") == 3


def test_an_answer_to_a_request_nobody_opened_is_refused() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.respond("exec-unknown", "approve", "f" * 64)
    [(status, reason)] = refusals(firewall, "exec-unknown")
    assert status == 409
    assert "no pending request" in reason


def test_a_first_abort_pauses_the_session_and_a_second_cancels_it() -> None:
    firewall = InMemoryFirewall(engine_for())
    first, first_hash = held_mail(firewall)
    firewall.respond(first, "中止", first_hash)
    [paused] = firewall.emitted("firewall.session_paused", session_id="session-1")
    assert paused["by"] == OPERATOR.model_dump()
    [rejected] = firewall.emitted("human.decision_recorded", execution_id=first)
    assert (rejected["decision"], rejected["comment"]) == ("reject", ABORT_COMMENT)
    assert firewall.emitted("policy.user_level_changed") == []  # an abort says nothing about the tool

    read = firewall.propose("fs.read", {"path": "a.txt"})
    held = firewall.verdict(read)
    assert held["decision"] == "hold"
    assert any(f["layer"] == "session" for f in held["findings"])
    elsewhere = firewall.propose("fs.read", {"path": "a.txt"}, session_id="session-2")
    assert firewall.verdict(elsewhere)["decision"] == "allow"

    firewall.respond(read, "stop", held["args_hash"])
    [cancel] = firewall.emitted("firewall.session_cancel_requested", session_id="session-1")
    assert cancel["by"]["id"] == "alice"
    assert firewall.emitted("human.decision_recorded", execution_id=read) == []


def test_a_reconciliation_answer_that_overtakes_its_question_is_retried_within_the_grace() -> None:
    firewall = InMemoryFirewall(engine_for(), response_grace_seconds=10.0)
    mail, args_hash = held_mail(firewall)
    firewall.respond(mail, "approve", args_hash)

    with pytest.raises(TransientError):
        firewall.respond(mail, "completed", args_hash)  # the executor's question is still on its way
    assert refusals(firewall, mail) == []

    firewall.deliver(suspended(mail, session_id="session-1"), owner="executor", version=3)
    firewall.respond(mail, "completed", args_hash)
    assert [d["decision"] for d in firewall.emitted("human.decision_recorded", execution_id=mail)] == [
        "approve",
        "completed",
    ]


def test_a_reconciliation_answer_for_a_call_that_ran_at_once_is_retried_until_its_question_arrives() -> None:
    firewall = InMemoryFirewall(engine_for(), response_grace_seconds=10.0)
    read = firewall.propose("fs.read", {"path": "notes.txt"})
    allowed = firewall.verdict(read)
    assert allowed["decision"] == "allow"  # no approval was ever open for it

    with pytest.raises(TransientError):
        firewall.respond(read, "failed", allowed["args_hash"])  # the executor's question is on its way
    firewall.deliver(suspended(read, session_id="session-1"), owner="executor", version=3)
    firewall.respond(read, "failed", allowed["args_hash"])
    assert [d["decision"] for d in firewall.emitted("human.decision_recorded", execution_id=read)] == [
        "failed"
    ]


def test_a_reconciliation_answer_older_than_the_grace_is_refused() -> None:
    firewall = InMemoryFirewall(engine_for(), response_grace_seconds=10.0)
    mail, args_hash = held_mail(firewall)
    firewall.respond(mail, "approve", args_hash)
    firewall.respond(mail, "completed", args_hash, occurred_at=firewall.clock.now - 11.0)
    assert [status for status, _ in refusals(firewall, mail)] == [409]


def test_three_rejections_escalate_the_tools_user_level_with_a_hint() -> None:
    firewall = InMemoryFirewall(engine_for(admin_from(HELD_WRITES)))
    for i in range(3):
        write = firewall.propose("fs.write", {"path": f"draft{i}.md", "content": str(i)})
        firewall.respond(write, "拒绝", firewall.verdict(write)["args_hash"])
    [change] = firewall.emitted("policy.user_level_changed", tool="fs.write")
    assert (change["before"], change["after"], change["trigger"]) == (
        None,
        "APPROVE",
        "3 consecutive rejections",
    )
    [hint] = firewall.emitted("firewall.hint_issued", tool="fs.write")
    assert hint["kind"] == "avoid"
    assert firewall.engine.policy.user.level("fs.write") is Level.APPROVE
    later = firewall.propose("fs.write", {"path": "next.md", "content": "x"})
    assert firewall.verdict(later)["level"] == "APPROVE"


def test_an_unanswered_request_is_escalated_then_decided_by_the_timeout_rule_once() -> None:
    firewall = InMemoryFirewall(engine_for())
    mail, args_hash = held_mail(firewall)  # APPROVE: escalated after 1800 s, decided after 7200 s
    assert firewall.run(firewall.firewall.check_timeouts) == 0

    firewall.clock.advance(1801)
    assert firewall.run(firewall.firewall.check_timeouts) == 1
    [escalated] = firewall.emitted("firewall.approval_escalated", execution_id=mail)
    assert escalated["to_role"] == "admin"
    assert firewall.run(firewall.firewall.check_timeouts) == 0

    firewall.clock.advance(7200)
    firewall.run(firewall.firewall.check_timeouts)
    [decided] = firewall.emitted("human.decision_recorded", execution_id=mail)
    assert (decided["decision"], decided["args_hash"], decided["decided_by"]) == (
        "timeout",
        args_hash,
        {"kind": "system", "id": "firewall"},
    )
    assert firewall.run(firewall.firewall.check_timeouts) == 0
