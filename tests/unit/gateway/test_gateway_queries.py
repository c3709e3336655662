"""The gateway's queries on in-memory peers: the settled consequence view, and an execution's open question."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import Principal
from overseer_events.views import Until
from overseer_gateway.application.queries import consequence_when_settled, open_question
from overseer_runtime.rpc import RpcError
from tests.fakes.gateway import APPROVAL_FORM, InMemoryPeers

VIEW = {"execution_id": "e1", "status": "COMPLETED"}


def observer(answer: Any) -> InMemoryPeers:
    def consequence(payload: dict[str, Any]) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    return InMemoryPeers(methods={("observer", "consequence"): consequence})


@pytest.mark.parametrize("until", ["settled", "terminal", "started"])
async def test_the_observer_waits_for_the_execution_to_settle_a_little_longer_than_asked(
    until: Until,
) -> None:
    peers = observer(VIEW)
    view = await consequence_when_settled(peers, "e1", wait=2.0, until=until)
    assert view == VIEW
    (asked,) = peers.asked
    assert asked.payload == {"execution_id": "e1", "wait": 2.0, "until": until}
    assert asked.timeout is not None
    assert asked.timeout > 2.0


async def test_an_execution_the_observer_does_not_know_is_no_view() -> None:
    peers = observer(RpcError(404, "no execution e1"))
    assert await consequence_when_settled(peers, "e1", wait=0.0, until="settled") is None


@pytest.mark.parametrize("status", [503, 504, 500])
async def test_an_observer_that_cannot_answer_is_an_error_not_an_unknown_execution(status: int) -> None:
    peers = observer(RpcError(status, "observer is away"))
    with pytest.raises(RpcError) as failed:
        await consequence_when_settled(peers, "e1", wait=0.0, until="settled")
    assert failed.value.status == status


def executor(form: Any) -> InMemoryPeers:
    return InMemoryPeers(methods={("executor", "approvals.get"): lambda payload: form})


async def test_the_executors_form_is_the_card_its_key_and_its_session() -> None:
    question = await open_question(executor(APPROVAL_FORM), "e1")
    assert question is not None
    assert question.key == "approval@1763780000.5"
    assert question.session_id == "s-1"
    card = question.card
    assert (card.execution_id, card.kind, card.status, card.args_hash) == ("e1", "approval", "waiting", "h1")
    assert card.requested_by == Principal(kind="agent", id="bot")
    assert card.decided is False


@pytest.mark.parametrize(
    ("requested_by", "principal"),
    [
        ("agent:bot", Principal(kind="agent", id="bot")),
        ("bot", Principal(kind="agent", id="bot")),
        ({"kind": "operator", "id": "olga"}, Principal(kind="operator", id="olga")),
        ({"id": "bot"}, Principal(kind="agent", id="bot")),
        (None, None),
        ("", None),
    ],
)
async def test_the_requester_is_read_from_each_form_the_executor_writes(
    requested_by: Any, principal: Principal | None
) -> None:
    question = await open_question(executor(APPROVAL_FORM | {"requested_by": requested_by}), "e1")
    assert question is not None
    assert question.card.requested_by == principal


async def test_an_answered_form_is_a_decided_card_and_a_form_without_a_time_is_keyed_by_its_kind() -> None:
    form = {k: v for k, v in APPROVAL_FORM.items() if k != "requested_at"} | {"status": "answered"}
    question = await open_question(executor(form), "e1")
    assert question is not None
    assert question.card.decided is True
    assert question.key == "approval"


async def test_no_form_is_no_open_question() -> None:
    assert await open_question(executor(None), "e1") is None


async def test_an_execution_the_executor_does_not_know_is_its_refusal() -> None:
    def unknown(payload: dict[str, Any]) -> Any:
        raise RpcError(404, "no execution e1")

    peers = InMemoryPeers(methods={("executor", "approvals.get"): unknown})
    with pytest.raises(RpcError) as refused:
        await open_question(peers, "e1")
    assert refused.value.status == 404
