"""The claim on an idempotency key: an irreversible action never runs while an identical one is in flight or done."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer_events.catalogue import EcsRequested, ExecutionTransitioned
from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.claims import BLOCKING, CLAIMING, Twin, twin_refusal
from overseer_executor.domain.contract import ExecutionContract, Outcome
from overseer_executor.domain.rules import (
    ToolOutcome,
    ToolOutcomeKind,
    decide_approval_expiry,
    decide_human_decision,
    decide_recovery,
    decide_session_cancel,
    decide_stale_twin_card,
    decide_tool_outcome,
    decide_verdict,
)
from tests.unit.executor.executor_builders import ALICE, contract, human, proposal, verdict

S = ExecutionStatus


def moves_of(outcome: Outcome) -> list[tuple[str, str, str, str]]:
    return [
        (e.from_status, e.to_status, e.trigger, e.actor)
        for e in outcome.events
        if isinstance(e, ExecutionTransitioned)
    ]


def held(execution_id: str = "exec-001", twin: Twin | None = None) -> ExecutionContract:
    c = contract(proposal(execution_id))
    return decide_verdict(c, verdict("hold", level="APPROVE"), dependency=None, twin=twin, now=2).contract


# -- the pure rule -----------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [S.RUNNING, S.WAITING])
def test_a_twin_in_flight_refuses_an_irreversible_action_and_names_the_twin(status: ExecutionStatus) -> None:
    c = contract()
    reason = twin_refusal(c, Twin("exec-000", status))
    assert reason is not None
    assert reason.startswith("duplicate: an identical irreversible action is in flight as exec-000")
    assert status.value in reason
    assert c.idempotency_key is not None
    assert c.idempotency_key in reason


def test_a_completed_twin_refuses_an_irreversible_action_as_a_duplicate() -> None:
    reason = twin_refusal(contract(), Twin("exec-000", S.COMPLETED))
    assert reason is not None
    assert reason.startswith("duplicate: an identical irreversible action already completed as exec-000")


@pytest.mark.parametrize("status", [S.PENDING, S.FAILED, S.REJECTED, S.CANCELLED])
def test_a_twin_that_never_started_or_ended_without_effect_is_no_reason(status: ExecutionStatus) -> None:
    assert twin_refusal(contract(), Twin("exec-000", status)) is None


def test_a_reversible_action_is_never_refused_for_a_twin() -> None:
    c = contract(proposal(tool="fs.list", args={"path": "."}))
    for status in BLOCKING:
        assert twin_refusal(c, Twin("exec-000", status)) is None


def test_a_contract_is_not_its_own_twin() -> None:
    assert twin_refusal(contract(), Twin("exec-001", S.RUNNING)) is None


def test_the_claim_is_held_from_running_until_a_terminal_state() -> None:
    assert {S.RUNNING, S.WAITING} == CLAIMING
    assert {S.RUNNING, S.WAITING, S.COMPLETED} == BLOCKING


# -- verdicts ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("decision", ["allow", "hold"])
@pytest.mark.parametrize("status", [S.RUNNING, S.WAITING])
def test_a_verdict_on_an_irreversible_action_whose_twin_is_in_flight_rejects_it_without_a_form(
    decision: str, status: ExecutionStatus
) -> None:
    out = decide_verdict(
        contract(), verdict(decision, level="APPROVE"), dependency=None, twin=Twin("exec-000", status), now=2
    )
    assert moves_of(out) == [
        ("pending", "running", "start", "tool_node"),
        ("running", "rejected", "reject", "tool_node"),
    ]
    assert not [e for e in out.events if isinstance(e, EcsRequested)]  # no approval card for the twin
    assert out.run_tool is False
    assert out.contract.error_message is not None
    assert "in flight as exec-000" in out.contract.error_message


@pytest.mark.parametrize("status", [S.FAILED, S.REJECTED, S.CANCELLED])
def test_a_twin_that_ended_without_effect_lets_the_retry_run(status: ExecutionStatus) -> None:
    out = decide_verdict(contract(), verdict("allow"), dependency=None, twin=Twin("exec-000", status), now=2)
    assert out.run_tool is True
    assert out.contract.status == S.RUNNING


def test_a_denied_twin_is_rejected_with_the_firewalls_reasons_not_as_a_duplicate() -> None:
    out = decide_verdict(
        contract(), verdict("deny", reasons=["L3: no"]), dependency=None, twin=Twin("x", S.RUNNING), now=2
    )
    assert out.contract.error_message == "L3: no"


# -- decisions -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [S.RUNNING, S.WAITING, S.COMPLETED])
def test_approving_a_card_whose_twin_is_in_flight_or_done_ends_the_card_rejected(
    status: ExecutionStatus,
) -> None:
    out = decide_human_decision(held(), human(), twin=Twin("exec-000", status), now=3)
    assert isinstance(out, Outcome)
    assert moves_of(out) == [
        ("waiting", "running", "resume", "graph_runner"),
        ("running", "rejected", "reject", "graph_runner"),
    ]
    assert out.run_tool is False
    assert out.contract.open_request is None  # the card is answered: it leaves the pending lists
    assert out.contract.error_message is not None
    assert out.contract.error_message.startswith("duplicate: an identical irreversible action")
    assert "exec-000" in out.contract.error_message
    assert out.contract.error_message.endswith(f"approved by {ALICE} but not run")


def test_approving_a_card_whose_twin_awaits_a_reconciliation_ends_the_card() -> None:
    twin = Twin("exec-000", S.WAITING, "reconciliation")
    out = decide_human_decision(held(), human(), twin=twin, now=3)
    assert isinstance(out, Outcome)
    assert out.contract.status == S.REJECTED
    assert out.contract.error_message is not None
    assert "in flight as exec-000 (waiting" in out.contract.error_message


@pytest.mark.parametrize("form", ["approval", "confirmation"])
def test_of_two_cards_left_open_by_an_earlier_version_the_first_approved_runs(form: str) -> None:
    out = decide_human_decision(held(), human(), twin=Twin("exec-000", S.WAITING, form), now=3)
    assert isinstance(out, Outcome)
    assert out.run_tool is True
    assert out.contract.status == S.RUNNING


def test_a_twin_waiting_on_its_approval_still_keeps_a_new_verdict_from_opening_a_second_card() -> None:
    twin = Twin("exec-000", S.WAITING, "approval")
    out = decide_verdict(contract(), verdict("hold", level="APPROVE"), dependency=None, twin=twin, now=2)
    assert out.contract.status == S.REJECTED
    assert out.contract.open_request is None


def test_rejecting_a_card_whose_twin_is_in_flight_is_an_ordinary_rejection() -> None:
    out = decide_human_decision(held(), human(decision="reject"), twin=Twin("exec-000", S.RUNNING), now=3)
    assert isinstance(out, Outcome)
    assert out.contract.status == S.REJECTED
    assert out.contract.error_message == f"rejected by {ALICE}"


def test_reconciling_an_interrupted_call_is_not_refused_for_a_twin() -> None:
    running = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract
    asked = decide_recovery(running, tool_idempotent=False, now=3).contract
    out = decide_human_decision(asked, human(decision="completed"), twin=Twin("exec-000", S.COMPLETED), now=4)
    assert isinstance(out, Outcome)
    assert out.contract.status == S.COMPLETED


def test_a_misaligned_approval_is_still_refused_before_the_twin_is_considered() -> None:
    out = decide_human_decision(held(), human(hash_="0" * 64), twin=Twin("exec-000", S.RUNNING), now=3)
    assert out == "args_hash differs from the arguments the human was asked about"


# -- cards an earlier version left open -----------------------------------------------------------------
def test_at_start_a_card_whose_twin_completed_is_closed_rejected_with_the_reason() -> None:
    out = decide_stale_twin_card(held(), Twin("exec-000", S.COMPLETED), now=3)
    assert moves_of(out) == [
        ("waiting", "running", "resume", "graph_runner"),
        ("running", "rejected", "reject", "graph_runner"),
    ]
    assert out.run_tool is False
    assert out.contract.error_message is not None
    assert out.contract.error_message.startswith(
        "duplicate: an identical irreversible action already completed as exec-000"
    )
    assert out.contract.error_message.endswith("its approval card was closed")


@pytest.mark.parametrize(
    "twin", [None, Twin("exec-000", S.RUNNING), Twin("exec-000", S.WAITING, "approval"), Twin("x", S.FAILED)]
)
def test_at_start_a_card_without_a_completed_twin_stays_open(twin: Twin | None) -> None:
    out = decide_stale_twin_card(held(), twin, now=3)
    assert out.events == ()


def test_at_start_a_reconciliation_question_is_never_closed_for_a_twin() -> None:
    running = decide_verdict(contract(), verdict("allow"), dependency=None, twin=None, now=2).contract
    asked = decide_recovery(running, tool_idempotent=False, now=3).contract
    assert decide_stale_twin_card(asked, Twin("exec-000", S.COMPLETED), now=4).events == ()


# -- any interleaving of identical actions -------------------------------------------------------------
class Ledger:
    """Identical irreversible contracts and what the repository would say about their twins."""

    def __init__(self, n: int) -> None:
        self.contracts = {f"e{i}": contract(proposal(f"e{i}")) for i in range(n)}
        self.sent = 0

    def twin_of(self, c: ExecutionContract) -> Twin | None:
        """As the repository: a COMPLETED twin, else the most binding holder of the claim."""
        others = [o for o in self.contracts.values() if o.execution_id != c.execution_id]

        def binding(o: ExecutionContract) -> tuple[bool, bool, bool]:
            form = o.open_request.kind if o.open_request else None
            return (o.status == S.COMPLETED, o.status == S.RUNNING, form == "reconciliation")

        found = sorted((o for o in others if o.status in BLOCKING), key=binding, reverse=True)
        if not found:
            return None
        first = found[0]
        return Twin(first.execution_id, first.status, first.open_request.kind if first.open_request else None)

    def happen(self, what: str, execution_id: str, now: float) -> None:
        c = self.contracts[execution_id]
        twin = self.twin_of(c)
        out: Outcome | str
        match what:
            case "allow" | "hold":
                out = decide_verdict(c, verdict(what, level="APPROVE"), dependency=None, twin=twin, now=now)
            case "approve" | "reject" | "completed" | "failed":
                out = decide_human_decision(c, human(execution_id, what), twin=twin, now=now)
            case "sent" | "refused":
                kind: ToolOutcomeKind = "succeeded" if what == "sent" else "failed"
                out = decide_tool_outcome(c, ToolOutcome(kind, what), now=now)
            case "crash":
                out = decide_recovery(c, tool_idempotent=False, now=now)
            case "cancel":
                out = decide_session_cancel(c, "abort", now=now)
            case "expire":
                out = decide_approval_expiry(c, 1.0, now=now + 10)
            case _:
                raise AssertionError(what)
        if isinstance(out, str):
            return
        if out.run_tool:
            assert twin_refusal(out.contract, twin, resuming=what == "approve") is None
            self.sent += 1
        self.contracts[execution_id] = out.contract


HAPPENINGS = st.tuples(
    st.sampled_from(
        [
            "allow",
            "hold",
            "approve",
            "reject",
            "completed",
            "failed",
            "sent",
            "refused",
            "crash",
            "cancel",
            "expire",
        ]
    ),
    st.integers(0, 2),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(HAPPENINGS, max_size=30))
def test_identical_irreversible_actions_hold_one_claim_and_complete_at_most_once(
    happenings: list[tuple[str, int]],
) -> None:
    ledger = Ledger(3)
    for i, (what, which) in enumerate(happenings):
        ledger.happen(what, f"e{which}", now=10.0 + i)
        statuses = [c.status for c in ledger.contracts.values()]
        assert sum(s in CLAIMING for s in statuses) <= 1
        assert sum(s == S.COMPLETED for s in statuses) <= 1
        if S.COMPLETED in statuses:
            assert not any(s in CLAIMING for s in statuses)
