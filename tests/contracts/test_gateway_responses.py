"""Responses' contract, held by the in-memory fake and by a running gateway's store (the gateway_responses
read model): a card is answered once its ``human.responded`` is emitted, a question of the agent once its
``conversation.answer_received`` is, in that transaction already."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from overseer_events.catalogue import AnswerReceived, HumanResponded, Principal
from overseer_gateway.application.ports import GatewayUnit
from overseer_gateway.domain.approvals import response_aggregate
from overseer_runtime.testing import Stack
from tests.contracts.gateway_backends import BACKENDS, GatewayBackend, gateway_backend


@pytest.fixture(params=BACKENDS)
async def gateway(request: pytest.FixtureRequest, stack: Stack) -> AsyncIterator[GatewayBackend]:
    async with gateway_backend(request.param, stack) as backend:
        yield backend


def respond(unit: GatewayUnit, execution_id: str, card: str) -> None:
    unit.emit_as("gateway:olga")(
        HumanResponded(
            execution_id=execution_id,
            response="approve",
            args_hash="h1",
            responder=Principal(kind="operator", id="olga"),
        ),
        aggregate_id=response_aggregate(execution_id, card),
        aggregate_version=1,
    )


async def answered(gateway: GatewayBackend, execution_id: str, card: str) -> bool:
    return await gateway.transactions.execute(
        lambda unit: unit.responses.already_responded(execution_id, card)
    )


async def test_no_card_is_answered_before_a_decision_is_recorded(gateway: GatewayBackend) -> None:
    assert await answered(gateway, "e1", "approval@1.5") is False


async def test_a_recorded_decision_answers_its_card_in_its_own_transaction_and_after(
    gateway: GatewayBackend,
) -> None:
    def decide_and_look(unit: GatewayUnit) -> tuple[bool, bool]:
        before = unit.responses.already_responded("e1", "approval@1.5")
        respond(unit, "e1", "approval@1.5")
        return before, unit.responses.already_responded("e1", "approval@1.5")

    assert await gateway.transactions.execute(decide_and_look) == (False, True)
    assert await answered(gateway, "e1", "approval@1.5") is True


async def test_a_decision_answers_only_its_own_card_of_its_own_execution(gateway: GatewayBackend) -> None:
    await gateway.transactions.execute(lambda unit: respond(unit, "e1", "approval@1.5"))
    assert await answered(gateway, "e1", "approval@9.5") is False
    assert await answered(gateway, "e2", "approval@1.5") is False
    assert await answered(gateway, "e1", "reconciliation@1.5") is False


async def test_a_decision_whose_transaction_fails_answers_nothing(gateway: GatewayBackend) -> None:
    def decide_then_fail(unit: GatewayUnit) -> None:
        respond(unit, "e1", "approval@1.5")
        raise RuntimeError("the request failed after the decision was written")

    with pytest.raises(RuntimeError):
        await gateway.transactions.execute(decide_then_fail)
    assert await answered(gateway, "e1", "approval@1.5") is False


def answer(unit: GatewayUnit, session_id: str, request_id: str) -> None:
    unit.emit_as("gateway:olga")(
        AnswerReceived(
            session_id=session_id,
            request_id=request_id,
            answer="yes",
            responder=Principal(kind="operator", id="olga"),
        ),
        aggregate_id=f"answer:{session_id}:{request_id}",
        aggregate_version=1,
    )


async def test_a_question_of_the_agent_is_answered_once_its_answer_is_recorded_in_that_transaction_already(
    gateway: GatewayBackend,
) -> None:
    def answer_and_look(unit: GatewayUnit) -> tuple[bool, bool]:
        before = unit.responses.already_answered("s1", "t1:4")
        answer(unit, "s1", "t1:4")
        return before, unit.responses.already_answered("s1", "t1:4")

    assert await gateway.transactions.execute(answer_and_look) == (False, True)
    assert await gateway.transactions.execute(lambda unit: unit.responses.already_answered("s1", "t1:4"))
    assert not await gateway.transactions.execute(lambda unit: unit.responses.already_answered("s1", "t1:9"))
    assert not await gateway.transactions.execute(lambda unit: unit.responses.already_answered("s2", "t1:4"))


def respond_by_link(unit: GatewayUnit, execution_id: str, link_id: str) -> None:
    unit.emit_as("gateway:olga")(
        HumanResponded(
            execution_id=execution_id,
            response="approve",
            args_hash="h1",
            responder=Principal(kind="operator", id="olga"),
            via="link:ops",
            link_id=link_id,
        ),
        aggregate_id=response_aggregate(execution_id, "approval@1.5"),
        aggregate_version=1,
    )


async def test_an_approval_link_is_used_once_its_decision_is_recorded_in_that_transaction_already(
    gateway: GatewayBackend,
) -> None:
    def use_and_look(unit: GatewayUnit) -> tuple[bool, bool]:
        before = unit.responses.link_used("link-1")
        respond_by_link(unit, "e1", "link-1")
        return before, unit.responses.link_used("link-1")

    assert await gateway.transactions.execute(use_and_look) == (False, True)
    assert await gateway.transactions.execute(lambda unit: unit.responses.link_used("link-1"))
    assert not await gateway.transactions.execute(lambda unit: unit.responses.link_used("link-2"))
