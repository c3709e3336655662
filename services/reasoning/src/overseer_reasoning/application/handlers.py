"""Event handlers: what the world tells the agent, taken as steps of its turns (load → take → record).

* A person's message waits in its session's inbox (the read model keeps it); the driver starts
  its turn as soon as the session's agent is free.
* A tool call's end (the observer's execution fact) is the outcome of the call the turn waits
  on (every fact is also remembered: the memory index keeps it as an execution summary).
* A person's answer to the open question resumes the turn; an answer that grants a permission
  resumes it once the firewall has recorded the grant (``policy.path_granted``) or refused it.

Each handler records at most one step, in the transaction of the event that brought its input,
and wakes the driver after the commit. Input the turn is not waiting for (an answer to a question
already answered, the outcome of another agent's call) changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from overseer_events.catalogue import AnswerReceived, ExecutionFactObserved, FirewallAlert
from overseer_reasoning.application.turns import ReasoningUnit, outcome_of, take_input
from overseer_reasoning.domain.normalise import InvalidInput
from overseer_reasoning.domain.steps import Answered, Returned

log = logging.getLogger(__name__)

Wake = Callable[[str], None]
"""Wakes the turn driver for a session (after the commit)."""


def message_received(session_id: str, unit: ReasoningUnit, wake: Wake) -> None:
    """The message is in the session's inbox (the read model put it there): the driver takes it."""
    unit.after_commit(lambda: wake(session_id))


def execution_ended(fact: ExecutionFactObserved, unit: ReasoningUnit, wake: Wake) -> None:
    """If the session's turn waits on the execution, its outcome is the next step (the memory index
    has already remembered the fact: ``domain/memories.py``)."""
    state = unit.states.load(fact.session_id)
    pending = state.turn.pending_tool_call if state.turn is not None else None
    if pending is None or pending.call_id != fact.execution_id:
        return  # not a call this agent waits on (another agent's, or one already taken)
    outcome = outcome_of(fact, pending.call)
    if outcome is None:
        return
    take_input(unit, fact.session_id, Returned(call_id=pending.call_id, outcome=outcome))
    unit.after_commit(lambda: wake(fact.session_id))


def answer_received(answer: AnswerReceived, unit: ReasoningUnit, wake: Wake) -> None:
    """The person's answer resumes the turn that asked (the gateway checked the question is open).

    An answer that authorises a permission waits for the firewall to record the grant (the read
    model keeps it): the retry it leads to must be judged with the grant in place.
    """
    if answer.grant is None:
        resume(answer.session_id, answer.request_id, answer.answer, unit, wake)


def grant_settled(request_id: str, unit: ReasoningUnit, wake: Wake) -> None:
    """The firewall recorded (or refused) the grant an answer asked for: the turn resumes with it."""
    waiting = unit.states.granting(request_id)
    if waiting is not None:
        resume(waiting.session_id, request_id, waiting.answer, unit, wake)


def grant_refused(alert: FirewallAlert, unit: ReasoningUnit, wake: Wake) -> None:
    """A refused grant resumes the turn too (its retry is then judged without one)."""
    request_id = alert.details.get("request_id")
    if alert.kind == "grant_refused" and isinstance(request_id, str):
        grant_settled(request_id, unit, wake)


def resume(session_id: str, request_id: str, answer: str, unit: ReasoningUnit, wake: Wake) -> None:
    """The answer to the open question ``request_id`` as the turn's next step; any other changes nothing."""
    state = unit.states.load(session_id)
    opened = state.turn.open_request if state.turn is not None else None
    if opened is None or opened.request_id != request_id:
        log.info("answer to %s in %s: no such open question", request_id, session_id)
        return
    try:
        take_input(unit, session_id, Answered(request_id=request_id, answer=answer))
    except InvalidInput as exc:
        log.info("answer to %s in %s: %s", request_id, session_id, exc)
        return
    unit.after_commit(lambda: wake(session_id))
