"""The CO lifecycle through CORegistry: seed 000 §4.3's 6×6 matrix, written out here independently."""

from __future__ import annotations

import pytest

from overseer_col.application.registry import CORegistry
from overseer_col.domain.errors import CoConflict, CoInvalid, CoNotFound
from overseer_events.catalogue import CoTransitioned
from overseer_events.machines import CO_MACHINE, CognitiveObjectStatus
from tests.fakes.col import InMemoryCol

STATES = ["emerging", "active", "waiting", "blocked", "stable", "archived"]

# Seed 000 §4.3, row = from, column = to; None is "-" (no transition).
SEED_MATRIX: dict[str, list[str | None]] = {
    #             emerging active        waiting blocked    stable     archived
    "emerging": [None, "clarify", None, None, None, "archive"],
    "active": [None, None, "wait", "block", "achieve", "archive"],
    "waiting": [None, "resume", None, "block", "achieve", "archive"],
    "blocked": [None, "unblock", None, None, None, "archive"],
    "stable": [None, "reactivate", None, None, None, "archive"],
    "archived": [None, "reactivate", None, None, None, None],
}
TRIGGERS = ["clarify", "wait", "resume", "block", "unblock", "achieve", "archive", "reactivate"]

# How to reach each state from a fresh (EMERGING) CO.
PATHS = {
    "emerging": [],
    "active": ["clarify"],
    "waiting": ["clarify", "wait"],
    "blocked": ["clarify", "block"],
    "stable": ["clarify", "achieve"],
    "archived": ["archive"],
}


def co_in(registry: CORegistry, state: str) -> str:
    co = registry.create("准备下周的技术分享", "user")
    for trigger in PATHS[state]:
        registry.transition(co.co_id, trigger, "user", f"to reach {state}")
    assert registry.require(co.co_id).status == state
    return co.co_id


def legal_from(state: str) -> list[str]:
    return [t for t in SEED_MATRIX[state] if t is not None]


def test_the_shared_machine_is_exactly_the_seed_matrix() -> None:
    for source in STATES:
        for target, trigger in zip(STATES, SEED_MATRIX[source], strict=True):
            leading_there = [
                t
                for t in CO_MACHINE.legal_triggers(CognitiveObjectStatus(source))
                if CO_MACHINE.next_state(CognitiveObjectStatus(source), t) == target
            ]
            assert leading_there == ([trigger] if trigger else []), (source, target)


@pytest.mark.parametrize("source", STATES)
@pytest.mark.parametrize("target", STATES)
def test_every_cell_of_the_matrix_is_reachable_only_by_its_trigger(
    registry: CORegistry, source: str, target: str
) -> None:
    expected = SEED_MATRIX[source][STATES.index(target)]
    for trigger in TRIGGERS:
        co_id = co_in(registry, source)
        if trigger in legal_from(source):
            moved = registry.transition(co_id, trigger, "user", "matrix")
            assert (moved.status == target) == (trigger == expected)
        else:
            with pytest.raises(CoConflict):
                registry.transition(co_id, trigger, "user", "matrix")
            assert registry.require(co_id).status == source


ILLEGAL_PAIRS = [
    (source, trigger)
    for source in STATES
    for trigger in [*TRIGGERS, "explode"]
    if trigger not in [t for t in SEED_MATRIX[source] if t is not None]
]


@pytest.mark.parametrize(("source", "trigger"), ILLEGAL_PAIRS)
def test_an_illegal_trigger_is_a_conflict_naming_the_legal_ones_and_changes_nothing(
    registry: CORegistry, source: str, trigger: str
) -> None:
    co_id = co_in(registry, source)
    before = registry.require(co_id)
    with pytest.raises(CoConflict) as refused:
        registry.transition(co_id, trigger, "user")
    assert refused.value.status == 409
    assert refused.value.legal_triggers == legal_from(source)
    for legal in legal_from(source):
        assert legal in refused.value.detail
    assert registry.require(co_id) == before


def test_every_transition_is_recorded_with_from_to_trigger_timestamp_actor_and_reason(
    registry: CORegistry,
) -> None:
    co_id = co_in(registry, "emerging")
    registry.transition(co_id, "clarify", "user", "the talk topic is LangGraph")
    registry.transition(co_id, "wait", "execution_event", "invitations sent, waiting for replies")
    co = registry.require(co_id)
    assert [(t["from"], t["to"], t["trigger"], t["actor"], t["reason"]) for t in co.transitions] == [
        ("emerging", "active", "clarify", "user", "the talk topic is LangGraph"),
        ("active", "waiting", "wait", "execution_event", "invitations sent, waiting for replies"),
    ]
    assert all(set(t) == {"from", "to", "trigger", "timestamp", "actor", "reason"} for t in co.transitions)
    assert co.transitions[0]["timestamp"] < co.transitions[1]["timestamp"] == co.updated_at


@pytest.mark.parametrize("actor", ["user", "system", "execution_event", "timeout"])
def test_each_seed_actor_may_fire_a_trigger(registry: CORegistry, actor: str) -> None:
    co_id = co_in(registry, "emerging")
    assert registry.transition(co_id, "clarify", actor).transitions[-1]["actor"] == actor


@pytest.mark.parametrize("actor", ["llm", "reasoning_node", ""])
def test_an_actor_outside_the_seed_list_is_refused(registry: CORegistry, actor: str) -> None:
    co_id = co_in(registry, "emerging")
    with pytest.raises(CoInvalid, match="unknown actor"):
        registry.transition(co_id, "clarify", actor)
    assert registry.require(co_id).status == "emerging"


def test_an_archived_object_can_be_reactivated(registry: CORegistry) -> None:
    co_id = co_in(registry, "archived")
    assert registry.transition(co_id, "reactivate", "user", "back on the table").status == "active"


def test_a_transition_of_an_unknown_object_is_not_found(registry: CORegistry) -> None:
    with pytest.raises(CoNotFound):
        registry.transition("nope", "clarify", "user")


def test_a_transition_emits_one_co_transitioned_event(registry: CORegistry, col: InMemoryCol) -> None:
    co_id = co_in(registry, "emerging")
    registry.transition(co_id, "clarify", "user", "why", command_id="cmd-1")
    event = col.emitted[-1]
    assert isinstance(event.data, CoTransitioned)
    assert (event.aggregate_id, event.data.from_status, event.data.to_status) == (co_id, "emerging", "active")
    assert event.data.command_id == "cmd-1"


def test_a_reason_longer_than_the_limit_is_refused(registry: CORegistry) -> None:
    co_id = co_in(registry, "emerging")
    with pytest.raises(CoInvalid, match="reason"):
        registry.transition(co_id, "clarify", "user", "x" * 2_001)
