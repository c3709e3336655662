"""FirewallEngine: one verdict per proposal, composed from the five layers, failing closed."""

from __future__ import annotations

from overseer_events.canonical import args_hash
from overseer_firewall.domain.engine import DEFAULT_LAYERS, FirewallEngine
from overseer_firewall.domain.layers.base import KernelView
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import L3, L5, MODE, SESSION, Evaluation
from overseer_firewall.domain.modes import parse_mode
from tests.unit.firewall.fw_kernel import admin_from, engine_for, proposal

MAIL = {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}


def test_auto_is_allowed(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.read", {"path": "a.txt"}))
    assert (verdict.level, verdict.decision, verdict.notify, verdict.needs_preview) == (
        Level.AUTO,
        Decision.ALLOW,
        False,
        False,
    )


def test_notify_is_allowed_and_notified(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.write", {"path": "a.md", "content": "x"}))
    assert (verdict.level, verdict.decision, verdict.notify) == (Level.NOTIFY, Decision.ALLOW, True)


def test_approve_is_held_with_a_preview_needed(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("email.send", MAIL))
    assert (verdict.level, verdict.decision, verdict.needs_preview) == (Level.APPROVE, Decision.HOLD, True)
    assert verdict.irreversible


def test_confirm_is_held() -> None:
    engine = engine_for(
        admin_from('[[rules]]\ntool = "email.send"\nrecipients = ["*@example.com"]\nlevel = "CONFIRM"\n')
    )
    verdict = engine.evaluate(proposal("email.send", MAIL))
    assert (verdict.level, verdict.decision) == (Level.CONFIRM, Decision.HOLD)


def test_a_layer_that_forbids_denies(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.write", {"path": "../../x", "content": ""}))
    assert verdict.decision is Decision.DENY
    assert "climbs out of the sandbox" in verdict.reasons[0]


def test_a_deny_stops_the_pipeline(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("email.send", {"to": "bob@example.com"}))
    assert verdict.decision is Decision.DENY
    assert [f.layer for f in verdict.findings] == ["L1.parameters"]


def test_an_unknown_tool_is_held_at_confirm_fail_closed(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("mcp.launch_rockets", {"count": 3}))
    assert (verdict.level, verdict.decision) == (Level.CONFIRM, Decision.HOLD)


def test_an_unknown_tool_declared_irreversible_needs_approve(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("mcp.pay_invoice", {"id": "7"}, irreversible=True))
    assert (verdict.level, verdict.decision) == (Level.APPROVE, Decision.HOLD)


class ExplodingLayer:
    """A layer with a bug: the engine must hold, never allow."""

    name = "L3.permission"

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        raise RuntimeError("policy store unavailable")


def test_an_exception_inside_a_layer_holds_and_never_allows() -> None:
    layers = (*DEFAULT_LAYERS[:2], ExplodingLayer(), *DEFAULT_LAYERS[3:])
    engine = engine_for(layers=layers)
    verdict = engine.evaluate(proposal("fs.read", {"path": "a.txt"}))
    assert (verdict.level, verdict.decision) == (Level.CONFIRM, Decision.HOLD)
    failed = verdict.finding(L3)
    assert failed is not None
    assert "RuntimeError: policy store unavailable" in failed.message


def test_arguments_without_canonical_form_are_denied(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("shell.run", {"command": "sleep", "timeout_seconds": float("nan")}))
    assert verdict.decision is Decision.DENY


def test_args_hash_covers_the_rewritten_arguments(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.write", {"path": "./a/../b.md", "content": "x", "extra": 1}))
    assert dict(verdict.args) == {"path": "b.md", "content": "x"}
    assert verdict.args_hash == args_hash({"path": "b.md", "content": "x"})


def test_the_verdict_names_policy_version_and_requester(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.read", {"path": "a"}, proposer="agent:bot"))
    assert verdict.policy_version == engine.policy.version
    assert verdict.requested_by == "agent:bot"


def test_a_question_for_a_person_is_held_at_confirm(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(
        proposal(None, {}, action_type="ecs_request", detail={"question": "Which file?"})
    )
    assert (verdict.level, verdict.decision) == (Level.CONFIRM, Decision.HOLD)


def test_a_paused_session_holds_new_proposals(engine: FirewallEngine) -> None:
    engine.gate.paused("session-1")
    verdict = engine.evaluate(proposal("fs.read", {"path": "a"}))
    assert verdict.decision is Decision.HOLD
    assert verdict.finding(SESSION) is not None
    assert (
        engine.evaluate(proposal("fs.read", {"path": "a"}, session_id="session-2")).decision is Decision.ALLOW
    )


def test_an_audited_agent_is_never_made_to_wait_but_raises_an_alert(engine: FirewallEngine) -> None:
    engine.modes.set("agent:remote", parse_mode("audited", None, now=0.0))
    verdict = engine.evaluate(proposal("email.send", MAIL, proposer="agent:remote"))
    assert verdict.decision is Decision.ALLOW
    assert verdict.level is Level.APPROVE
    assert verdict.finding(MODE) is not None
    assert verdict.alerts
    assert "would have been held" in verdict.alerts[0]


def test_an_audited_agent_still_cannot_leave_the_sandbox(engine: FirewallEngine) -> None:
    engine.modes.set("agent:remote", parse_mode("audited", None, now=0.0))
    verdict = engine.evaluate(
        proposal("fs.write", {"path": "/etc/x", "content": ""}, proposer="agent:remote")
    )
    assert verdict.decision is Decision.DENY
    assert verdict.alerts


def test_low_confidence_streak_is_held_by_the_breaker(engine: FirewallEngine) -> None:
    for i in range(2):
        engine.evaluate_and_observe(
            proposal("fs.read", {"path": f"n{i}"}, confidence=0.1, occurred_at=float(i))
        )
    verdict = engine.evaluate(proposal("fs.read", {"path": "n9"}, confidence=0.1, occurred_at=9.0))
    assert verdict.decision is Decision.HOLD
    assert verdict.finding(L5) is not None
