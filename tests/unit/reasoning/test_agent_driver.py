"""The turn driver and the handlers on fakes: steps recorded with their effects, outcomes and answers
taken back, a crash before a commit costing nothing but a re-run, and never a call proposed twice."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from overseer_events.catalogue import (
    AgentStepTaken,
    AnswerReceived,
    ConversationReplied,
    CoSuggested,
    ExecutionFactObserved,
    MemoryStored,
    Principal,
)
from overseer_events.views import ExecutionConsequenceView
from overseer_reasoning.application.handlers import answer_received, execution_ended
from overseer_reasoning.application.plugins import ModelCall
from overseer_reasoning.application.turns import StaleState, record
from overseer_reasoning.domain.emotion import EmotionalContext
from overseer_reasoning.domain.machine import Node
from overseer_reasoning.domain.plan import Intent, IntentKind
from overseer_reasoning.domain.state import new_state
from overseer_reasoning.domain.steps import fold, input_of
from tests.unit.reasoning.agent_fakes import Agent, CrashBeforeCommit

ALICE = Principal(kind="operator", id="alice")


def fact(execution_id: str, status: str = "completed", result: str | None = "[]", error: str | None = None,
         tool_summary: str = "fs.list → .", suspended: bool = False, session_id: str = "s") -> ExecutionFactObserved:  # fmt: skip
    label = {"completed": "SUCCESS", "failed": "FAILED", "rejected": "REJECTED"}[status]
    view = ExecutionConsequenceView(
        execution_id=execution_id,
        action_type="tool_call",
        action_summary=tool_summary,
        consequence_label=label,
        result=result,
        error_message=error,
        has_side_effects=False,
        was_suspended=suspended,
        is_still_pending=False,
        total_duration_ms=3.0,
    )
    return ExecutionFactObserved(
        execution_id=execution_id,
        session_id=session_id,
        action_type="tool_call",
        action_summary=tool_summary,
        final_status=status,
        irreversible=False,
        consequence=view,
    )


async def test_a_turn_runs_until_its_tool_call_is_proposed_under_an_id_of_its_turn_and_step() -> None:
    agent = Agent()
    turn_id = agent.receive("list the files")
    await agent.driver().advance("s")
    [proposal] = agent.proposals()
    state = agent.states.load("s")
    pending = state.current_turn().pending_tool_call
    assert pending is not None
    assert proposal.execution_id == pending.call_id == f"{turn_id}:5"
    assert (proposal.tool, proposal.args, proposal.session_id) == ("fs.list", {"path": "."}, "s")
    assert str(proposal.proposer) == "agent:reasoning"
    assert state.status == "waiting_for_tool"
    assert agent.states.version("s") == 5
    assert [s.step for s in agent.emitted(AgentStepTaken)] == [1, 2, 3, 4, 5]
    assert agent.states.next_message("s") is None


async def test_the_outcome_of_the_call_resumes_the_turn_which_replies_from_the_consequence_and_remembers() -> (
    None
):
    agent = Agent()
    turn_id = agent.receive("list the files")
    driver = agent.driver()
    await driver.advance("s")
    [proposal] = agent.proposals()
    listed = fact(proposal.execution_id, result='[{"name": "notes.md"}]')
    await agent.run(lambda unit: execution_ended(listed, unit, driver.wake))
    await agent.settle()
    [reply] = agent.emitted(ConversationReplied)
    assert reply.in_reply_to == turn_id
    assert "[SUCCESS] fs.list → .: " in reply.text
    assert "notes.md" in reply.text
    assert agent.states.load("s").status == "done"
    # The turn's notes are the agent's events; the execution is remembered from its fact, by the index.
    assert f"{turn_id}:m1" in {m.memory_id for m in agent.emitted(MemoryStored)}


async def test_an_outcome_the_turn_does_not_wait_on_changes_nothing_of_the_turn() -> None:
    agent = Agent()
    agent.receive("list the files")
    driver = agent.driver()
    await driver.advance("s")
    before = agent.states.version("s")
    emitted = len(agent.outbox.recorded)
    await agent.run(lambda unit: execution_ended(fact("someone-else:1"), unit, driver.wake))
    await agent.settle()
    assert agent.states.version("s") == before
    assert len(agent.outbox.recorded) == emitted


async def test_a_crash_before_the_commit_loses_the_steps_and_the_rerun_proposes_the_same_call_once() -> None:
    agent = Agent(crash_next_commit=True)
    turn_id = agent.receive("list the files")
    driver = agent.driver()
    with pytest.raises(CrashBeforeCommit):
        await driver.advance("s")
    assert agent.proposals() == []
    assert agent.states.version("s") == 0
    await driver.advance("s")  # after the restart
    await driver.advance("s")  # and once more: nothing left to think
    assert [p.execution_id for p in agent.proposals()] == [f"{turn_id}:5"]


async def test_steps_computed_from_a_state_that_moved_on_are_refused() -> None:
    agent = Agent()
    agent.receive("list the files")
    await agent.driver().advance("s")
    with pytest.raises(StaleState):
        record(agent.unit(), "s", expected_version=3, taken=[])


async def test_a_message_that_arrives_while_a_turn_runs_waits_and_starts_the_next_turn() -> None:
    agent = Agent()
    first = agent.receive("list the files")
    driver = agent.driver()
    await driver.advance("s")
    second = agent.receive("hello")
    await driver.advance("s")  # the first turn still waits for its tool: the second message waits
    assert agent.states.load("s").current_turn().turn_id == first
    [proposal] = agent.proposals()
    await agent.run(lambda unit: execution_ended(fact(proposal.execution_id), unit, driver.wake))
    await agent.settle()
    replies = agent.emitted(ConversationReplied)
    assert [r.in_reply_to for r in replies] == [first, second]
    assert agent.states.load("s").status == "done"
    assert agent.states.next_message("s") is None


async def test_a_question_suspends_the_turn_and_only_the_answer_to_the_open_question_resumes_it() -> None:
    agent = Agent()
    agent.receive("send an e-mail")
    driver = agent.driver()
    await driver.advance("s")
    opened = agent.states.load("s").current_turn().open_request
    assert opened is not None
    assert opened.request.kind == "clarify"
    assert agent.states.load("s").status == "waiting_for_human"
    version = agent.states.version("s")
    stray = AnswerReceived(
        session_id="s", request_id="elsewhere:1", answer="bob@example.com", responder=ALICE
    )
    await agent.run(lambda unit: answer_received(stray, unit, driver.wake))
    assert agent.states.version("s") == version
    answer = AnswerReceived(
        session_id="s", request_id=opened.request_id, answer="to bob@example.com", responder=ALICE
    )
    await agent.run(lambda unit: answer_received(answer, unit, driver.wake))
    await agent.settle()
    [proposal] = agent.proposals()
    assert proposal.tool == "email.send"
    assert proposal.args["to"] == "bob@example.com"
    assert agent.states.load("s").node is Node.TOOL_RESULT


async def test_remember_this_suggests_a_cognitive_object_when_the_col_is_on() -> None:
    agent = Agent()
    turn_id = agent.receive("remember this: the project Apollo launches in March")
    await agent.driver().advance("s")
    [suggested] = agent.emitted(CoSuggested)
    assert suggested.suggestion_id == f"{turn_id}:co"
    assert suggested.kind == "create"
    assert "Apollo" in suggested.fields["title"]
    assert suggested.session_id == "s"


async def test_a_result_too_large_for_the_state_is_kept_as_its_beginning_and_a_reference() -> None:
    agent = Agent()
    agent.receive("list the files")
    driver = agent.driver()
    await driver.advance("s")
    [proposal] = agent.proposals()
    huge = fact(proposal.execution_id, result="\x01" * 200_000)
    await agent.run(lambda unit: execution_ended(huge, unit, driver.wake))
    await agent.settle()
    state = agent.states.load("s")
    assert state.status == "done"
    [outcome] = state.current_turn().outcomes
    assert f"execution {proposal.execution_id}'s" in str(outcome.result)


class ReadsLikeAModel:
    """A reading plugin that reads every message as urgent mail, at a cost, as a small model would."""

    async def intent(self, text: str, rules: Intent) -> tuple[Intent, tuple[ModelCall, ...]]:
        return Intent(IntentKind.SEND_EMAIL, confidence=0.7), (ModelCall("small", 20, 3, 1.5),)

    async def mood(
        self, text: str, recent: Sequence[str]
    ) -> tuple[EmotionalContext | None, tuple[ModelCall, ...]]:
        return EmotionalContext(urgency=0.9, cues=("urgency:model",)), (ModelCall("small", 30, 4, 2.0),)


async def test_what_a_model_read_of_the_message_is_recorded_with_its_calls_and_a_replay_needs_no_model() -> (
    None
):
    agent = Agent()
    agent.receive("hello there")
    await agent.driver(reading=ReadsLikeAModel()).advance("s")
    steps = [s for s in agent.emitted(AgentStepTaken) if s.session_id == "s"]
    started, felt = steps[0].input, steps[1].input
    assert started["intent"]["kind"] == "send_email"
    assert started["calls"][0]["model"] == "small"
    assert felt["context"]["urgency"] == 0.9
    assert felt["calls"][0]["prompt_tokens"] == 30
    state = agent.states.load("s")
    assert state.emotional_context.urgency == 0.9
    assert state.current_turn().tone == "concise"
    replayed = new_state("s")
    for step in steps:
        replayed = fold(replayed, step.turn_id, input_of(step.input))
    assert replayed.emotional_context == state.emotional_context
    assert replayed.semantic_input == state.semantic_input


class ReadsAtACost:
    """A reading plugin that agrees with the rules, at a cost."""

    async def intent(self, text: str, rules: Intent) -> tuple[Intent, tuple[ModelCall, ...]]:
        return rules, (ModelCall("small", 20, 3, 1.5),)

    async def mood(
        self, text: str, recent: Sequence[str]
    ) -> tuple[EmotionalContext | None, tuple[ModelCall, ...]]:
        return None, (ModelCall("small", 30, 4, 2.0),)


async def test_a_tool_call_says_how_many_model_tokens_its_session_used_so_far() -> None:
    agent = Agent()
    agent.receive("list the files")
    await agent.driver(reading=ReadsAtACost()).advance("s")
    [proposal] = agent.proposals()
    assert proposal.model_tokens == (20 + 3) + (30 + 4)  # what the normalise and emotion nodes' model used
