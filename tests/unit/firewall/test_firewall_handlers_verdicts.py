"""FirewallHandlers on in-memory ports: every proposal judged once, recorded, audited; the executor's facts.

The handlers are the service's own; only the read models and the outbox are in memory
(``tests/fakes/firewall.py``), changed by each event as the SQL projections are.
"""

from __future__ import annotations

import orjson

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned
from overseer_firewall.domain.audit import verify_chain
from overseer_firewall.domain.gate import PendingStatus
from overseer_firewall.domain.perception import OutcomeClass
from tests.fakes.firewall import AGENT, InMemoryFirewall
from tests.unit.firewall.fw_kernel import SANDBOX, admin_from, engine_for

HELD_WRITES = '[defaults]\n"fs.write" = "CONFIRM"\n'
MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}


def audit_kinds(firewall: InMemoryFirewall) -> list[str]:
    return [r["kind"] for r in firewall.audit_records()]


def test_each_proposal_gets_exactly_one_verdict_however_often_it_is_proposed() -> None:
    firewall = InMemoryFirewall(engine_for())
    read = firewall.propose("fs.read", {"path": "notes/today.md"})
    firewall.propose("fs.read", {"path": "/etc/shadow"}, execution_id=read)  # the same execution, again
    verdict = firewall.verdict(read)
    assert (verdict["level"], verdict["decision"], verdict["args"]) == (
        "AUTO",
        "allow",
        {"path": "notes/today.md"},
    )
    assert verdict["requested_by"] == AGENT.model_dump()
    assert audit_kinds(firewall) == ["proposal", "verdict"]


async def test_proposals_and_verdicts_extend_one_hash_chain_in_order() -> None:
    firewall = InMemoryFirewall(engine_for())
    for path in ("a.md", "b.md"):
        firewall.propose("fs.read", {"path": path})
    chain = firewall.store.audit
    entries = await chain.entries()
    assert [(index, orjson.loads(text)["kind"]) for index, _, _, text in entries] == [
        (1, "proposal"),
        (2, "verdict"),
        (3, "proposal"),
        (4, "verdict"),
    ]
    assert verify_chain(await chain.entries(), await chain.recorded_head()).ok


def test_a_write_at_notify_runs_and_tells_the_user() -> None:
    firewall = InMemoryFirewall(engine_for())
    write = firewall.propose("fs.write", {"path": "report.md", "content": "# Report\n"})
    assert (firewall.verdict(write)["level"], firewall.verdict(write)["decision"]) == ("NOTIFY", "allow")
    [notice] = firewall.emitted("firewall.notified", execution_id=write)
    assert notice["message"].startswith("runs and tells you: ")
    assert firewall.store.approvals.get(write) is None


def test_a_held_write_opens_a_request_previewed_as_a_diff_of_the_file_in_the_sandbox() -> None:
    firewall = InMemoryFirewall(engine_for(admin_from(HELD_WRITES)), files={f"{SANDBOX}/report.md": "old\n"})
    write = firewall.propose("fs.write", {"path": "report.md", "content": "new\n"})
    verdict = firewall.verdict(write)
    assert (verdict["level"], verdict["decision"]) == ("CONFIRM", "hold")
    assert verdict["preview"]["kind"] == "diff"
    assert verdict["preview"]["exists"] is True
    assert "-old" in verdict["preview"]["diff"]
    assert "+new" in verdict["preview"]["diff"]
    request = firewall.store.approvals.get(write)
    assert request is not None
    assert (request.kind, request.status, request.args_hash) == (
        "approval",
        PendingStatus.PENDING,
        verdict["args_hash"],
    )


def test_a_question_to_a_person_is_previewed_as_the_question() -> None:
    firewall = InMemoryFirewall(engine_for())
    ask = firewall.propose(
        None, action_type="ecs_request", action_detail={"question": "Which room?"}, summary="ask the user"
    )
    verdict = firewall.verdict(ask)
    assert verdict["decision"] == "hold"
    assert verdict["preview"] == {
        "kind": "question",
        "detail": {"question": "Which room?"},
        "summary": "ask the user",
    }
    request = firewall.store.approvals.get(ask)
    assert request is not None
    assert request.kind == "confirmation"


def test_an_answer_naming_other_arguments_than_were_judged_is_refused_with_an_alert() -> None:
    firewall = InMemoryFirewall(engine_for())
    mail = firewall.propose("email.send", MAIL)
    judged = firewall.verdict(mail)["args_hash"]
    firewall.respond(mail, "approve", "f" * 64)  # the card it answers named other arguments
    [refused] = firewall.emitted("firewall.response_refused", execution_id=mail)
    assert refused["status"] == 409
    [alert] = firewall.emitted("firewall.alert")
    assert alert["kind"] == "args_hash_mismatch"
    assert alert["details"] == {
        "execution_id": mail,
        "verdict_args_hash": judged,
        "answered_args_hash": "f" * 64,
    }
    assert audit_kinds(firewall)[-2:] == ["alert", "refusal"]
    firewall.respond(mail, "approve", judged)
    assert len(firewall.emitted("firewall.alert")) == 1  # the right arguments raise none
    assert len(firewall.emitted("human.decision_recorded", execution_id=mail)) == 1


def transitioned(execution_id: str, to_status: str, result: str | None = None) -> ExecutionTransitioned:
    return ExecutionTransitioned(
        execution_id=execution_id,
        session_id="session-1",
        from_status="running",
        to_status=to_status,
        trigger="succeed",
        actor="tool_node",
        timestamp=0.0,
        result=result,
    )


def test_an_ended_execution_is_perceived_and_audited_with_its_tool_and_outcome() -> None:
    firewall = InMemoryFirewall(engine_for())
    listing = firewall.propose("fs.list", {"path": "."})
    firewall.deliver(transitioned(listing, "running"), owner="executor", version=2)
    assert audit_kinds(firewall) == ["proposal", "verdict"]
    firewall.deliver(transitioned(listing, "completed", "a.txt\nb.txt"), owner="executor", version=3)
    [outcome] = [r for r in firewall.audit_records() if r["kind"] == "outcome"]
    assert (outcome["execution_id"], outcome["tool"], outcome["status"], outcome["outcome"]) == (
        listing,
        "fs.list",
        "completed",
        OutcomeClass.SUCCESS.value,
    )
    assert dict(firewall.engine.bus.stats().tools["fs.list"].outcomes) == {"success": 1}


def announced(execution_id: str, *moves: ExecutionTransitioned) -> ContractCreated:
    return ContractCreated(
        execution_id=execution_id,
        session_id="session-1",
        action_type="tool_call",
        action_detail={},
        tool="fs.list",
        args={"path": "."},
        proposer=AGENT,
        created_at=0.0,
        transitions=list(moves),
    )


def test_a_contract_announced_with_its_end_is_perceived_and_audited_as_that_end() -> None:
    firewall = InMemoryFirewall(engine_for())
    listing = firewall.propose("fs.list", {"path": "."})
    started = transitioned(listing, "running").model_copy(
        update={"from_status": "pending", "trigger": "start"}
    )
    firewall.deliver(announced(listing, started), owner="executor", version=2)
    assert audit_kinds(firewall) == ["proposal", "verdict"]  # announced open: no outcome yet

    other = firewall.propose("fs.list", {"path": "notes"})
    ended = transitioned(other, "completed", "a.txt")
    firewall.deliver(
        announced(other, started.model_copy(update={"execution_id": other}), ended),
        owner="executor",
        version=3,
    )
    [outcome] = [r for r in firewall.audit_records() if r["kind"] == "outcome"]
    assert (outcome["execution_id"], outcome["tool"], outcome["status"], outcome["outcome"]) == (
        other,
        "fs.list",
        "completed",
        OutcomeClass.SUCCESS.value,
    )
    assert dict(firewall.engine.bus.stats().tools["fs.list"].outcomes) == {"success": 1}
