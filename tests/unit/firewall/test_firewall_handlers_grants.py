"""FirewallHandlers on in-memory ports: a person's answer granting a read becomes the session's path grant."""

from __future__ import annotations

from overseer_events.catalogue import PathGrant as Asked
from overseer_firewall.application.state import KernelState
from overseer_firewall.domain.levels import Decision
from tests.fakes.firewall import AGENT, OPERATOR, InMemoryFirewall
from tests.unit.firewall.fw_kernel import SANDBOX, engine_for, proposal

REPORT = "/home/alice/reports/q3.txt"


def held(firewall: InMemoryFirewall, path: str = REPORT, session_id: str = "session-1") -> bool:
    execution_id = firewall.propose("fs.read", {"path": path}, session_id=session_id)
    return bool(firewall.verdict(execution_id)["decision"] == "hold")


def audit_records(firewall: InMemoryFirewall, kind: str) -> list[dict[str, object]]:
    return [r for r in firewall.audit_records() if r["kind"] == kind]


def test_an_authorising_answer_with_a_grant_records_it_and_the_retry_is_allowed() -> None:
    firewall = InMemoryFirewall(engine_for())
    assert held(firewall)

    firewall.answer("ask-1", "授权并重试", Asked(tool="fs.read", path=REPORT))

    [granted] = firewall.emitted("policy.path_granted")
    assert granted == {
        "session_id": "session-1",
        "tool": "fs.read",
        "path": REPORT,
        "request_id": "ask-1",
        "granted_by": OPERATOR.model_dump(),
    }
    [record] = [r for r in audit_records(firewall, "policy") if r["change"] == "path_grant"]
    assert (record["session_id"], record["tool"], record["path"], record["by"]) == (
        "session-1",
        "fs.read",
        REPORT,
        "operator:alice",
    )
    assert not held(firewall)
    assert held(firewall, session_id="session-2")


def test_a_grant_is_recorded_once_per_request_however_often_it_is_answered() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.answer("ask-1", "yes", Asked(tool="fs.read", path=REPORT))
    firewall.answer("ask-1", "yes", Asked(tool="fs.read", path="/home/alice"))
    assert [g["path"] for g in firewall.emitted("policy.path_granted")] == [REPORT]
    assert held(firewall, "/home/alice/other.txt")


def test_a_relative_grant_path_is_recorded_absolute_from_the_sandbox() -> None:
    firewall = InMemoryFirewall(engine_for(), sandbox_root=SANDBOX)
    firewall.answer("ask-1", "ok", Asked(tool="fs.list", path="../exports"))
    [granted] = firewall.emitted("policy.path_granted")
    assert granted["path"] == "/srv/overseer/exports"


def test_a_grant_for_a_write_or_a_command_is_refused_with_an_alert() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.answer("ask-1", "授权", Asked(tool="fs.write", path="/home/alice/reports"))
    firewall.answer("ask-2", "授权", Asked(tool="shell.run", path="/home/alice"))
    assert firewall.emitted("policy.path_granted") == []
    alerts = firewall.emitted("firewall.alert", kind="grant_refused")
    assert [a["details"]["request_id"] for a in alerts] == ["ask-1", "ask-2"]
    assert all("only reads" in a["message"] for a in alerts)
    assert len(audit_records(firewall, "alert")) == 2
    write = firewall.propose("fs.write", {"path": "/home/alice/reports/x.txt", "content": "x"})
    assert firewall.verdict(write)["decision"] == "deny"


def test_a_grant_is_refused_when_the_answer_refuses_or_an_agent_answers() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.answer("ask-1", "不好", Asked(tool="fs.read", path=REPORT))
    firewall.answer("ask-2", "yes", Asked(tool="fs.read", path=REPORT), responder=AGENT)
    firewall.answer("ask-3", "yes", Asked(tool="fs.read", path="/"))
    assert firewall.emitted("policy.path_granted") == []
    assert len(firewall.emitted("firewall.alert", kind="grant_refused")) == 3
    assert held(firewall)


def test_an_answer_without_a_grant_changes_nothing() -> None:
    firewall = InMemoryFirewall(engine_for())
    assert firewall.answer("ask-1", "the report from last week") == []
    assert held(firewall)


async def test_a_recorded_grant_survives_a_restart_from_the_read_models() -> None:
    firewall = InMemoryFirewall(engine_for())
    firewall.answer("ask-1", "允许", Asked(tool="fs.read", path="/home/alice/reports"))

    restarted = KernelState(engine_for())
    restarted.load(await firewall.store.policy.rows())
    verdict = restarted.engine.evaluate(proposal("fs.read", {"path": REPORT}))
    assert verdict.decision is Decision.ALLOW
    assert restarted.engine.grants.describe() == firewall.engine.grants.describe()
