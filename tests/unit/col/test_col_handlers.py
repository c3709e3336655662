"""Handlers: user commands with outcomes, suggestions only a user decides, execution facts."""

from __future__ import annotations

import pytest

from overseer_col.application import handlers
from overseer_col.application.handlers import ColUnit
from overseer_col.application.ports import CommandOutcome
from overseer_col.application.registry import CORegistry
from overseer_col.domain.model import Suggestion
from overseer_events.catalogue import (
    CoCommandRejected,
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoExecutionMoved,
    CoLinkCommand,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
)
from tests.fakes.col import InMemoryCol


def create(unit: ColUnit, command_id: str = "cmd-create", co_id: str = "co-1", **fields: object) -> None:
    handlers.create_co(CoCreateCommand(command_id=command_id, co_id=co_id, title="技术分享", **fields), unit)


def transition(unit: ColUnit, trigger: str, command_id: str, co_id: str = "co-1") -> None:
    handlers.transition_co(CoTransitionCommand(command_id=command_id, co_id=co_id, trigger=trigger), unit)


def outcome_of(col: InMemoryCol, command_id: str) -> CommandOutcome:
    outcome = col.outcome(command_id)
    assert outcome is not None, f"no outcome of {command_id}"
    return outcome


def suggestion_of(col: InMemoryCol, suggestion_id: str) -> Suggestion:
    suggestion = col.suggestion(suggestion_id)
    assert suggestion is not None, f"no suggestion {suggestion_id}"
    return suggestion


# -- commands and their outcomes ------------------------------------------------------------
def test_a_create_command_records_201_and_wakes_its_waiter(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit, created_by="operator")
    outcome = col.outcome("cmd-create")
    assert outcome is not None
    assert (outcome.status, outcome.co_id) == (201, "co-1")
    assert col.settled_commands == ["cmd-create"]
    assert col.cos["co-1"].created_by == "operator"


def test_a_repeated_command_id_changes_nothing_and_keeps_its_first_outcome(
    unit: ColUnit, col: InMemoryCol
) -> None:
    create(unit)
    transition(unit, "clarify", "cmd-t")
    emitted = len(col.emitted)
    transition(unit, "clarify", "cmd-t")  # redelivered or retried by the gateway
    assert len(col.emitted) == emitted
    assert outcome_of(col, "cmd-t").status == 200
    assert col.cos["co-1"].status == "active"
    assert col.settled_commands.count("cmd-t") == 2


def test_an_illegal_trigger_is_rejected_with_409_and_the_legal_triggers(
    unit: ColUnit, col: InMemoryCol
) -> None:
    create(unit)
    transition(unit, "achieve", "cmd-bad")
    outcome = col.outcome("cmd-bad")
    assert outcome is not None
    assert (outcome.status, outcome.legal_triggers) == (409, ["clarify", "archive"])
    rejected = col.emitted[-1].data
    assert isinstance(rejected, CoCommandRejected)
    assert (rejected.command_id, rejected.status, rejected.legal_triggers) == (
        "cmd-bad",
        409,
        ["clarify", "archive"],
    )
    assert col.emitted[-1].aggregate_id == "co-command:cmd-bad"
    assert col.cos["co-1"].status == "emerging"


def test_a_command_for_an_unknown_object_is_rejected_with_404(unit: ColUnit, col: InMemoryCol) -> None:
    transition(unit, "clarify", "cmd-ghost", co_id="ghost")
    assert outcome_of(col, "cmd-ghost").status == 404


@pytest.mark.parametrize(
    "fields",
    [
        {"title": ""},
        {"description": "x" * 20_001},
        {"related_co_ids": [{"co_id": "co-0", "relation": "loves"}]},
    ],
)
def test_a_bad_create_command_is_rejected_with_422_and_creates_nothing(
    unit: ColUnit, col: InMemoryCol, fields: dict[str, object]
) -> None:
    command = CoCreateCommand(command_id="cmd-bad", co_id="co-9", **{"title": "t", **fields})
    handlers.create_co(command, unit)
    assert outcome_of(col, "cmd-bad").status == 422
    assert col.cos == {}
    assert col.types() == ["co.command_rejected"]


def test_update_and_link_commands_answer_200(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit)
    handlers.update_co(
        CoUpdateCommand(command_id="cmd-u", co_id="co-1", changes={"domain_tag": "work"}), unit
    )
    handlers.link_co(CoLinkCommand(command_id="cmd-l", co_id="co-1", execution_id="exec-1"), unit)
    handlers.link_co(CoLinkCommand(command_id="cmd-m", co_id="co-1", memory_id="mem-1"), unit)
    assert [outcome_of(col, c).status for c in ("cmd-u", "cmd-l", "cmd-m")] == [200, 200, 200]
    co = col.cos["co-1"]
    assert (co.domain_tag, co.linked_execution_ids, co.linked_memory_ids) == ("work", ["exec-1"], ["mem-1"])


def test_a_link_command_needs_exactly_one_target(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit)
    handlers.link_co(CoLinkCommand(command_id="cmd-l", co_id="co-1"), unit)
    assert outcome_of(col, "cmd-l").status == 422


# -- suggestions: the LLM may only suggest --------------------------------------------------
def suggest(unit: ColUnit, **fields: object) -> None:
    handlers.record_suggestion(CoSuggested(**fields), unit, session_id="session-7")


def test_a_create_suggestion_changes_nothing_until_a_user_confirms_it(
    unit: ColUnit, col: InMemoryCol
) -> None:
    suggest(
        unit, suggestion_id="s-1", kind="create", fields={"title": "每周检查习惯"}, reason="the user said so"
    )
    assert col.cos == {}
    assert [s.status for s in col.suggestions("pending")] == ["pending"]
    handlers.decide_suggestion(
        CoDecideSuggestionCommand(command_id="c", suggestion_id="s-1", decision="confirm"), unit
    )
    [co] = col.cos.values()
    assert (co.title, co.created_by, co.conversation_id, co.status) == (
        "每周检查习惯",
        "reasoning_node",
        "session-7",
        "emerging",
    )
    assert "s-1" in (co.creation_context or "")
    suggestion = col.suggestion("s-1")
    assert suggestion is not None
    assert (suggestion.status, suggestion.result_co_id) == ("confirmed", co.co_id)
    assert outcome_of(col, "c").co_id == co.co_id


def test_a_transition_suggestion_changes_nothing_until_confirmed_then_moves_as_the_user(
    unit: ColUnit, col: InMemoryCol
) -> None:
    create(unit)
    suggest(
        unit, suggestion_id="s-2", kind="transition", co_id="co-1", trigger="clarify", reason="details given"
    )
    assert col.cos["co-1"].status == "emerging"
    assert col.cos["co-1"].transitions == []
    handlers.decide_suggestion(
        CoDecideSuggestionCommand(command_id="c", suggestion_id="s-2", decision="confirm"), unit
    )
    co = col.cos["co-1"]
    assert co.status == "active"
    assert co.transitions[-1]["actor"] == "user"
    assert "suggested by reasoning (s-2)" in co.transitions[-1]["reason"]
    assert "details given" in co.transitions[-1]["reason"]


def test_a_dismissed_suggestion_changes_nothing(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit)
    suggest(unit, suggestion_id="s-3", kind="transition", co_id="co-1", trigger="archive")
    handlers.decide_suggestion(
        CoDecideSuggestionCommand(command_id="c", suggestion_id="s-3", decision="dismiss"), unit
    )
    assert col.cos["co-1"].status == "emerging"
    assert suggestion_of(col, "s-3").status == "dismissed"


def test_a_decided_suggestion_cannot_be_decided_again(unit: ColUnit, col: InMemoryCol) -> None:
    suggest(unit, suggestion_id="s-4", kind="create", fields={"title": "x"})
    decide = CoDecideSuggestionCommand(command_id="c1", suggestion_id="s-4", decision="dismiss")
    handlers.decide_suggestion(decide, unit)
    again = CoDecideSuggestionCommand(command_id="c2", suggestion_id="s-4", decision="confirm")
    handlers.decide_suggestion(again, unit)
    assert outcome_of(col, "c2").status == 409
    assert col.cos == {}


def test_confirming_a_suggestion_that_is_no_longer_legal_leaves_it_pending(
    unit: ColUnit, col: InMemoryCol
) -> None:
    create(unit)
    suggest(unit, suggestion_id="s-5", kind="transition", co_id="co-1", trigger="achieve")
    handlers.decide_suggestion(
        CoDecideSuggestionCommand(command_id="c", suggestion_id="s-5", decision="confirm"), unit
    )
    assert outcome_of(col, "c").status == 409
    assert suggestion_of(col, "s-5").status == "pending"
    assert col.cos["co-1"].status == "emerging"


def test_an_unknown_suggestion_is_not_found(unit: ColUnit, col: InMemoryCol) -> None:
    handlers.decide_suggestion(
        CoDecideSuggestionCommand(command_id="c", suggestion_id="nope", decision="dismiss"), unit
    )
    assert outcome_of(col, "c").status == 404


@pytest.mark.parametrize(
    "fields",
    [
        {"suggestion_id": "bad-1", "kind": "create", "fields": {}},
        {"suggestion_id": "bad-2", "kind": "transition", "co_id": "ghost", "trigger": "clarify"},
        {"suggestion_id": "bad-3", "kind": "transition", "co_id": "co-1", "trigger": "explode"},
    ],
)
def test_a_malformed_suggestion_is_not_recorded(
    unit: ColUnit, col: InMemoryCol, fields: dict[str, object]
) -> None:
    create(unit)
    suggest(unit, **fields)
    assert col.suggestions() == []


def test_the_same_suggestion_twice_is_recorded_once(unit: ColUnit, col: InMemoryCol) -> None:
    suggest(unit, suggestion_id="s-6", kind="create", fields={"title": "x"})
    suggest(unit, suggestion_id="s-6", kind="create", fields={"title": "x"})
    assert col.types() == ["co.suggestion_recorded"]


# -- execution facts ------------------------------------------------------------------------
def moved(execution_id: str, status: str, co_id: str = "co-1") -> CoExecutionMoved:
    """The executor's word that a contract naming ``co_id`` now stands at ``status``."""
    return CoExecutionMoved(execution_id=execution_id, session_id="session-1", co_id=co_id, status=status)


@pytest.mark.parametrize("outcome", ["completed", "failed", "rejected", "cancelled"])
def test_a_terminal_execution_is_reported_and_linked_without_a_status_change(
    unit: ColUnit, col: InMemoryCol, outcome: str
) -> None:
    create(unit)
    transition(unit, "clarify", "cmd-c")
    before = col.cos["co-1"]
    handlers.report_execution_fact(moved("exec-1", outcome), unit)
    after = col.cos["co-1"]
    assert (after.status, after.transitions) == (before.status, before.transitions)
    assert after.linked_execution_ids == ["exec-1"]
    assert [(r.execution_id, r.outcome) for r in col.execution_reports("co-1")] == [("exec-1", outcome)]


def test_a_terminal_word_heard_twice_is_reported_once(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit)
    handlers.report_execution_fact(moved("exec-1", "completed"), unit)
    handlers.report_execution_fact(moved("exec-1", "completed"), unit)
    assert col.types().count("co.execution_reported") == 1


@pytest.mark.parametrize("status", ["pending", "running", "waiting"])
def test_a_contract_naming_the_object_that_has_not_ended_is_linked_but_not_reported(
    unit: ColUnit, col: InMemoryCol, status: str
) -> None:
    create(unit)
    handlers.report_execution_fact(moved("exec-2", status), unit)
    assert col.cos["co-1"].linked_execution_ids == ["exec-2"]
    assert col.execution_reports("co-1") == []


def test_an_execution_naming_an_unknown_co_is_ignored(unit: ColUnit, col: InMemoryCol) -> None:
    create(unit)
    emitted = len(col.emitted)
    handlers.report_execution_fact(moved("exec-4", "completed", co_id="ghost"), unit)
    assert len(col.emitted) == emitted


def test_with_col_disabled_execution_events_are_ignored_but_commands_still_work(
    disabled_unit: ColUnit, col: InMemoryCol, registry: CORegistry
) -> None:
    create(disabled_unit)
    transition(disabled_unit, "clarify", "cmd-c")
    handlers.report_execution_fact(moved("exec-1", "completed"), disabled_unit)
    co = col.cos["co-1"]
    assert (co.status, co.linked_execution_ids) == ("active", [])
    assert col.execution_reports("co-1") == []
    assert "co.execution_reported" not in col.types()
