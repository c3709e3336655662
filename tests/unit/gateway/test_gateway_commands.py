"""The gateway's commands on in-memory ports: what each request becomes, and what a decision refuses."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import (
    CoTransitionCommand,
    ExecutionProposed,
    HumanResponded,
    MessageReceived,
    Principal,
)
from overseer_events.ids import uuid7
from overseer_gateway.application.commands import (
    CO_AWAIT_SECONDS,
    DecideApproval,
    Decided,
    ProposeAction,
    decide_approval,
    propose_action,
    receive_message,
    run_co_command,
)
from overseer_gateway.application.queries import OpenQuestion
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.approvals import ApprovalCard, Refusal
from overseer_runtime.rpc import RpcError
from tests.fakes.gateway import InMemoryGateway, InMemoryPeers

AGENT = Caller("bot", Role.AGENT)
OPERATOR = Caller("olga", Role.OPERATOR)


def question(execution_id: str = "e1", *, requested_by: str = "bot", **card: Any) -> OpenQuestion:
    fields: dict[str, Any] = {
        "execution_id": execution_id,
        "kind": "approval",
        "status": "waiting",
        "args_hash": "h1",
        "requested_by": Principal(kind="agent", id=requested_by),
    } | card
    return OpenQuestion(ApprovalCard(**fields), key="approval@1.5", session_id="s-1")


# -- proposing ------------------------------------------------------------------------------------
async def test_a_proposal_is_one_execution_proposed_by_the_agent_under_a_fresh_execution_id() -> None:
    gateway = InMemoryGateway()
    command = ProposeAction(session_id="s-1", tool="fs.list", args={"path": "."}, confidence=0.5)

    execution_id = await gateway.execute(lambda unit: propose_action(unit, command, AGENT))

    (event,) = gateway.events
    assert isinstance(event.data, ExecutionProposed)
    assert (event.aggregate_id, event.aggregate_version) == (execution_id, 1)
    assert (event.actor, event.correlation_id) == ("gateway:bot", "s-1")
    assert event.data.proposer == Principal(kind="agent", id="bot")
    assert event.data.action_detail == {"tool": "fs.list", "args": {"path": "."}}
    assert (event.data.tool, event.data.args, event.data.confidence) == ("fs.list", {"path": "."}, 0.5)


async def test_two_proposals_are_two_executions() -> None:
    gateway = InMemoryGateway()
    command = ProposeAction(session_id="s-1", tool="fs.list", args={})
    first = await gateway.execute(lambda unit: propose_action(unit, command, AGENT))
    second = await gateway.execute(lambda unit: propose_action(unit, command, AGENT))
    assert first != second
    assert [e.aggregate_id for e in gateway.events] == [first, second]


# -- deciding -------------------------------------------------------------------------------------
async def test_an_operators_approval_of_a_waiting_card_is_recorded_as_human_responded() -> None:
    gateway = InMemoryGateway()
    command = DecideApproval("e1", "approve", "h1", comment="fine")

    outcome = await gateway.execute(lambda unit: decide_approval(unit, command, question(), OPERATOR))

    assert isinstance(outcome, Decided)
    (event,) = gateway.events
    assert event.event_id == outcome.event_id
    assert event.data == outcome.response
    assert isinstance(event.data, HumanResponded)
    assert (event.data.response, event.data.args_hash, event.data.comment) == ("approve", "h1", "fine")
    assert event.data.responder == Principal(kind="operator", id="olga")
    assert event.data.session_id == "s-1"
    assert (event.aggregate_id, event.aggregate_version) == ("response:e1:approval@1.5", 1)
    assert (event.actor, event.correlation_id) == ("gateway:olga", "s-1")


async def test_a_second_decision_on_the_same_card_is_refused_and_records_nothing() -> None:
    gateway = InMemoryGateway()
    approve = DecideApproval("e1", "approve", "h1")
    await gateway.execute(lambda unit: decide_approval(unit, approve, question(), OPERATOR))

    reject = DecideApproval("e1", "reject", "h1")
    outcome = await gateway.execute(lambda unit: decide_approval(unit, reject, question(), OPERATOR))

    assert outcome == Refusal(409, "Already decided", "execution e1 has already been decided")
    assert len(gateway.events) == 1


async def test_two_decisions_in_one_transaction_cannot_both_pass() -> None:
    gateway = InMemoryGateway()
    command = DecideApproval("e1", "approve", "h1")

    def twice(unit: Any) -> tuple[object, object]:
        return decide_approval(unit, command, question(), OPERATOR), decide_approval(
            unit, command, question(), OPERATOR
        )

    first, second = await gateway.execute(twice)
    assert isinstance(first, Decided)
    assert isinstance(second, Refusal)
    assert second.status == 409
    assert len(gateway.events) == 1


async def test_a_new_card_of_the_same_execution_may_be_decided_again() -> None:
    gateway = InMemoryGateway()
    command = DecideApproval("e1", "approve", "h1")
    await gateway.execute(lambda unit: decide_approval(unit, command, question(), OPERATOR))
    later = OpenQuestion(question().card, key="approval@9.5", session_id="s-1")

    outcome = await gateway.execute(lambda unit: decide_approval(unit, command, later, OPERATOR))

    assert isinstance(outcome, Decided)
    assert [e.aggregate_id for e in gateway.events] == [
        "response:e1:approval@1.5",
        "response:e1:approval@9.5",
    ]


@pytest.mark.parametrize(
    ("command", "asked", "status", "title"),
    [
        (DecideApproval("e1", "approve", "h1"), question(requested_by="olga"), 403, "Self-approval"),
        (DecideApproval("e1", "approve", "h2"), question(), 409, "Arguments changed"),
        (DecideApproval("e1", "approve", "h1"), question(status="completed"), 409, "Not waiting"),
        (DecideApproval("e1", "approve", "h1"), question(decided=True), 409, "Already decided"),
        (DecideApproval("e1", "completed", "h1"), question(), 422, "Wrong decision for this card"),
    ],
)
async def test_a_refused_decision_says_why_and_records_nothing(
    command: DecideApproval, asked: OpenQuestion, status: int, title: str
) -> None:
    gateway = InMemoryGateway()
    outcome = await gateway.execute(lambda unit: decide_approval(unit, command, asked, OPERATOR))
    assert isinstance(outcome, Refusal)
    assert (outcome.status, outcome.title) == (status, title)
    assert gateway.events == []


# -- conversation ---------------------------------------------------------------------------------
async def test_a_message_is_received_on_the_rest_channel_from_the_caller_as_user() -> None:
    gateway = InMemoryGateway()
    caller = Caller("olga", Role.OPERATOR)
    await gateway.execute(lambda unit: receive_message(unit, "s-9", "hello", caller))
    await gateway.execute(lambda unit: receive_message(unit, "s-9", "again", caller))

    first, second = gateway.events
    assert isinstance(first.data, MessageReceived)
    assert (first.data.text, first.data.channel) == ("hello", "rest")
    assert first.data.principal == Principal(kind="user", id="olga")
    assert (first.aggregate_id, first.correlation_id, first.actor) == ("session:s-9", "s-9", "gateway:olga")
    assert [first.aggregate_version, second.aggregate_version] == [1, 2]


# -- Cognitive Object commands ----------------------------------------------------------------------
def transition(command_id: str) -> CoTransitionCommand:
    return CoTransitionCommand(command_id=command_id, co_id="co-1", trigger="clarify", actor="user")


async def test_a_co_command_is_emitted_once_and_answered_with_the_cols_committed_outcome() -> None:
    gateway = InMemoryGateway()
    outcome = {"co": {"co_id": "co-1", "status": "active"}}
    peers = InMemoryPeers(methods={("col", "command.await"): lambda payload: outcome})
    command_id = uuid7()

    answer = await run_co_command(gateway, peers, transition(command_id), OPERATOR)

    assert answer == outcome
    (event,) = gateway.events
    assert event.data == transition(command_id)
    assert (event.aggregate_id, event.aggregate_version) == (f"co-command:{command_id}", 1)
    assert event.actor == "gateway:olga"
    (asked,) = peers.asked
    assert (asked.service, asked.method) == ("col", "command.await")
    assert asked.payload == {"command_id": command_id, "timeout": CO_AWAIT_SECONDS}
    assert asked.timeout is not None
    assert asked.timeout > CO_AWAIT_SECONDS


async def test_the_cols_refusal_of_a_co_command_reaches_the_caller_with_its_status() -> None:
    gateway = InMemoryGateway()

    def refuse(payload: dict[str, Any]) -> Any:
        raise RpcError(409, "clarify is not legal from active", {"legal_triggers": ["wait"]})

    peers = InMemoryPeers(methods={("col", "command.await"): refuse})

    with pytest.raises(RpcError) as refused:
        await run_co_command(gateway, peers, transition(uuid7()), OPERATOR)

    assert refused.value.status == 409
    assert refused.value.extra == {"legal_triggers": ["wait"]}
    assert len(gateway.events) == 1  # the command stands; the col refused it
