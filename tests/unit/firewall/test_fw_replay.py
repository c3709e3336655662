"""Policy replay: exactly the recorded verdicts a candidate admin policy would change, no side effect."""

from __future__ import annotations

from overseer_firewall.bootstrap import DEFAULT_POLICY_FILE
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.paths import LexicalResolver
from overseer_firewall.domain.replay import RecordedProposal, ReplayReport, replay
from overseer_firewall.domain.tools import BUILTIN_CATALOGUE
from tests.unit.firewall.fw_kernel import CWD, SANDBOX, admin_from, engine_for, proposal

MAIL_INSIDE = {"to": "ann@example.com", "subject": "s", "body": "b"}
MAIL_OUTSIDE = {"to": "eve@evil.test", "subject": "s", "body": "b"}


def record_history() -> tuple[list[RecordedProposal], FirewallEngine]:
    engine = engine_for()
    history = [
        proposal("fs.read", {"path": "a.md"}, execution_id="read", occurred_at=1.0),
        proposal("email.send", MAIL_INSIDE, execution_id="mail-inside", occurred_at=2.0),
        proposal("email.send", MAIL_OUTSIDE, execution_id="mail-outside", occurred_at=3.0),
        proposal("fs.write", {"path": "b.md", "content": "x"}, execution_id="write", occurred_at=4.0),
        proposal("shell.run", {"command": "ls"}, execution_id="shell", occurred_at=5.0),
    ]
    records: list[RecordedProposal] = []
    for p in history:
        verdict = engine.evaluate_and_observe(p)
        records.append(RecordedProposal(p, verdict.level, verdict.decision, verdict.findings))
    return records, engine


def run(candidate_toml: str, records: list[RecordedProposal]) -> ReplayReport:
    return replay(
        admin_from(candidate_toml, version=99),
        records,
        catalogue=BUILTIN_CATALOGUE,
        sandbox_root=SANDBOX,
        cwd=CWD,
        home="/srv/overseer",
        resolver=LexicalResolver(),
    )


def test_replay_reports_exactly_the_verdicts_that_change() -> None:
    records, _ = record_history()
    candidate = """
[defaults]
"fs.write" = "CONFIRM"

[[rules]]
tool = "email.send"
recipients = ["*@example.com"]
level = "NOTIFY"
"""
    report = run(candidate, records)
    assert report.evaluated == 5
    changes = {
        c.execution_id: (c.before_level, c.before_decision, c.after_level, c.after_decision)
        for c in report.changed
    }
    assert changes == {
        "mail-inside": (Level.APPROVE, Decision.HOLD, Level.NOTIFY, Decision.ALLOW),
        "write": (Level.NOTIFY, Decision.ALLOW, Level.CONFIRM, Decision.HOLD),
    }


def test_replaying_the_same_policy_changes_nothing() -> None:
    records, _ = record_history()
    text = DEFAULT_POLICY_FILE.read_text(encoding="utf-8")
    assert run(text, records).changed == ()


def test_replay_keeps_history_dependent_holds_as_recorded() -> None:
    engine = engine_for()
    records: list[RecordedProposal] = []
    for i in range(3):
        p = proposal("fs.read", {"path": "same.md"}, execution_id=f"r{i}", occurred_at=float(i))
        verdict = engine.evaluate_and_observe(p)
        records.append(RecordedProposal(p, verdict.level, verdict.decision, verdict.findings))
    assert records[-1].decision is Decision.HOLD  # the loop layer held the third repeat
    report = run('[defaults]\n"fs.read" = "AUTO"\n', records)
    assert report.changed == ()


def test_replay_has_no_side_effect_on_the_live_engine() -> None:
    records, engine = record_history()
    before = engine.policy
    run('[defaults]\n"fs.read" = "APPROVE"\n', records)
    assert engine.policy is before
