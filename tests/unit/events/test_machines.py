"""The two state machines as tables: every pair, every trigger, and random walks."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overseer_events.errors import InvalidTransition
from overseer_events.machines import (
    CO_MACHINE,
    EXECUTION_MACHINE,
    GRAPH_RUNNER,
    TERMINAL_STATUSES,
    TOOL_NODE,
    CognitiveObjectStatus,
    ExecutionStatus,
    ForbiddenActor,
)

ES = ExecutionStatus
# Seed 003's matrix: (from, to) -> triggers.
EXECUTION_LEGAL = {
    (ES.PENDING, ES.RUNNING): {"start"},
    (ES.RUNNING, ES.WAITING): {"suspend"},
    (ES.RUNNING, ES.COMPLETED): {"succeed"},
    (ES.RUNNING, ES.FAILED): {"fail"},
    (ES.RUNNING, ES.REJECTED): {"reject"},
    (ES.RUNNING, ES.CANCELLED): {"cancel"},
    (ES.WAITING, ES.RUNNING): {"resume"},
    (ES.WAITING, ES.CANCELLED): {"cancel", "timeout"},
}
CS = CognitiveObjectStatus
# Seed 000 §4.3's matrix.
CO_LEGAL = {
    (CS.EMERGING, CS.ACTIVE): {"clarify"},
    (CS.EMERGING, CS.ARCHIVED): {"archive"},
    (CS.ACTIVE, CS.WAITING): {"wait"},
    (CS.ACTIVE, CS.BLOCKED): {"block"},
    (CS.ACTIVE, CS.STABLE): {"achieve"},
    (CS.ACTIVE, CS.ARCHIVED): {"archive"},
    (CS.WAITING, CS.ACTIVE): {"resume"},
    (CS.WAITING, CS.BLOCKED): {"block"},
    (CS.WAITING, CS.STABLE): {"achieve"},
    (CS.WAITING, CS.ARCHIVED): {"archive"},
    (CS.BLOCKED, CS.ACTIVE): {"unblock"},
    (CS.BLOCKED, CS.ARCHIVED): {"archive"},
    (CS.STABLE, CS.ACTIVE): {"reactivate"},
    (CS.STABLE, CS.ARCHIVED): {"archive"},
    (CS.ARCHIVED, CS.ACTIVE): {"reactivate"},
}


def test_execution_machine_has_exactly_seven_states_and_nine_transitions() -> None:
    assert len(ExecutionStatus) == 7
    assert len(EXECUTION_MACHINE.edges) == 9
    assert TERMINAL_STATUSES == {ES.COMPLETED, ES.FAILED, ES.REJECTED, ES.CANCELLED}


def test_co_machine_has_exactly_six_states_and_the_seed_triggers() -> None:
    assert len(CognitiveObjectStatus) == 6
    assert {(e.source, e.target, e.trigger) for e in CO_MACHINE.edges} == {
        (s, t, trig) for (s, t), triggers in CO_LEGAL.items() for trig in triggers
    }


@pytest.mark.parametrize(("source", "target"), list(itertools.product(ExecutionStatus, ExecutionStatus)))
def test_every_execution_pair_is_legal_only_with_its_trigger(source: ES, target: ES) -> None:
    legal = EXECUTION_LEGAL.get((source, target), set())
    edges_from = {e.trigger: e.target for e in EXECUTION_MACHINE.edges if e.source == source}
    for trigger in EXECUTION_MACHINE.triggers():
        if trigger in legal:
            assert EXECUTION_MACHINE.next_state(source, trigger) == target
        elif trigger in edges_from:
            assert edges_from[trigger] != target
        else:
            with pytest.raises(InvalidTransition) as info:
                EXECUTION_MACHINE.next_state(source, trigger)
            assert info.value.legal_triggers == EXECUTION_MACHINE.legal_triggers(source)


@pytest.mark.parametrize(
    ("source", "target"), list(itertools.product(CognitiveObjectStatus, CognitiveObjectStatus))
)
def test_every_co_pair_is_legal_only_with_its_trigger(source: CS, target: CS) -> None:
    legal = CO_LEGAL.get((source, target), set())
    for trigger in CO_MACHINE.triggers():
        edges_from = {e.trigger: e.target for e in CO_MACHINE.edges if e.source == source}
        if trigger in legal:
            assert CO_MACHINE.next_state(source, trigger, "user") == target
        elif trigger in edges_from:
            assert edges_from[trigger] != target
        else:
            with pytest.raises(InvalidTransition, match="legal"):
                CO_MACHINE.next_state(source, trigger, "user")


def test_illegal_trigger_error_names_the_legal_ones() -> None:
    with pytest.raises(InvalidTransition) as info:
        EXECUTION_MACHINE.next_state(ES.WAITING, "succeed")
    assert info.value.legal_triggers == ["resume", "cancel", "timeout"]
    assert "resume, cancel, timeout" in str(info.value)


def test_waiting_is_left_only_by_resume_cancel_or_timeout() -> None:
    assert set(EXECUTION_MACHINE.legal_triggers(ES.WAITING)) == {"resume", "cancel", "timeout"}


def test_terminal_execution_states_have_no_way_out() -> None:
    for state in TERMINAL_STATUSES:
        assert EXECUTION_MACHINE.legal_triggers(state) == []


def test_archived_cognitive_object_can_reactivate() -> None:
    assert CO_MACHINE.next_state(CS.ARCHIVED, "reactivate", "user") == CS.ACTIVE


def test_reasoning_may_not_move_an_execution() -> None:
    with pytest.raises(ForbiddenActor):
        EXECUTION_MACHINE.transition(ES.PENDING, "start", actor="reasoning", timestamp=0.0)


def test_the_llm_may_not_move_a_cognitive_object() -> None:
    with pytest.raises(ForbiddenActor):
        CO_MACHINE.transition(CS.EMERGING, "clarify", actor="reasoning_node", timestamp=0.0)


def test_a_transition_yields_the_seed_record() -> None:
    record = EXECUTION_MACHINE.transition(ES.WAITING, "resume", actor=GRAPH_RUNNER, timestamp=12.5)
    assert record.as_dict() == {
        "from": "waiting",
        "to": "running",
        "trigger": "resume",
        "timestamp": 12.5,
        "actor": "graph_runner",
        "reason": None,
    }
    co = CO_MACHINE.transition(CS.ACTIVE, "block", actor="execution_event", timestamp=1.0, reason="API down")
    assert co.as_dict()["reason"] == "API down"


def test_execution_topology_lists_edges_forbidden_pairs_and_resumable_states() -> None:
    topology = EXECUTION_MACHINE.topology()
    assert topology["initial_status"] == "pending"
    assert topology["resumable_statuses"] == ["waiting"]
    assert sorted(topology["terminal_statuses"]) == ["cancelled", "completed", "failed", "rejected"]
    assert len(topology["edges"]) == 9
    forbidden = {(f["from"], f["to"]): f["reason"] for f in topology["forbidden_transitions"]}
    assert len(forbidden) == 49 - len(EXECUTION_LEGAL)
    assert "WAITING is left only" in forbidden[("waiting", "completed")]
    assert "terminal" in forbidden[("completed", "running")]


@given(st.lists(st.sampled_from([*EXECUTION_MACHINE.triggers(), "bogus"]), max_size=40))
def test_random_trigger_sequences_never_leave_a_terminal_state(triggers: list[str]) -> None:
    state = EXECUTION_MACHINE.initial
    for trigger in triggers:
        before = state
        try:
            actor = GRAPH_RUNNER if trigger in ("resume", "timeout") else TOOL_NODE
            state = EXECUTION_MACHINE.next_state(state, trigger, actor)
        except InvalidTransition:
            assert state == before
            continue
        assert before not in TERMINAL_STATUSES
        assert state in set(ExecutionStatus)


@given(st.lists(st.sampled_from(CO_MACHINE.triggers()), max_size=40))
def test_random_co_sequences_stay_inside_the_six_states(triggers: list[str]) -> None:
    state = CO_MACHINE.initial
    for trigger in triggers:
        try:
            state = CO_MACHINE.next_state(state, trigger, "user")
        except InvalidTransition:
            continue
        assert state in set(CognitiveObjectStatus)
        assert state != CS.EMERGING
