"""The gateway's queries on in-memory peers: the settled consequence view, and an execution's open question."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import EcsRequested, Principal
from overseer_events.views import Until
from overseer_gateway.application.commands import change_policy
from overseer_gateway.application.queries import (
    audit_verification,
    consequence_when_settled,
    open_question,
    pending_approvals,
)
from overseer_runtime.rpc import RpcError
from tests.fakes.gateway import APPROVAL_FORM, InMemoryNoticeBook, InMemoryPeers

VIEW = {"execution_id": "e1", "status": "COMPLETED"}


def consequence_of(answer: Any) -> InMemoryPeers:
    def consequence(payload: dict[str, Any]) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    return InMemoryPeers(methods={("executor", "consequence"): consequence})


@pytest.mark.parametrize("until", ["settled", "terminal", "started"])
async def test_the_executor_waits_for_the_execution_to_settle_and_is_given_a_little_longer_than_asked(
    until: Until,
) -> None:
    peers = consequence_of(VIEW)
    view = await consequence_when_settled(peers, "e1", wait=2.0, until=until)
    assert view == VIEW
    (asked,) = peers.asked
    assert asked.payload == {"execution_id": "e1", "wait": 2.0, "until": until}
    assert asked.timeout is not None
    assert asked.timeout > 2.0


async def test_the_session_is_told_when_it_is_known() -> None:
    peers = consequence_of(VIEW)
    await consequence_when_settled(peers, "e1", wait=2.0, until="settled", session_id="s-1")
    (asked,) = peers.asked
    assert asked.payload == {"execution_id": "e1", "wait": 2.0, "until": "settled", "session_id": "s-1"}


async def test_an_execution_the_executor_does_not_know_is_no_view() -> None:
    peers = consequence_of(RpcError(404, "no execution e1"))
    assert await consequence_when_settled(peers, "e1", wait=0.0, until="settled") is None


@pytest.mark.parametrize("status", [503, 504, 500])
async def test_an_executor_that_cannot_answer_is_an_error_not_an_unknown_execution(status: int) -> None:
    peers = consequence_of(RpcError(status, "executor is away"))
    with pytest.raises(RpcError) as failed:
        await consequence_when_settled(peers, "e1", wait=0.0, until="settled")
    assert failed.value.status == status


def executor(form: Any) -> InMemoryPeers:
    return InMemoryPeers(methods={("executor", "approvals.get"): lambda payload: form})


NO_CARDS = InMemoryNoticeBook()


def held(card: EcsRequested, *, closed: bool = False) -> InMemoryNoticeBook:
    book = InMemoryNoticeBook()
    book.cards[card.execution_id] = card
    if closed:
        book.closed.add(card.execution_id)
    return book


# The card the executor's APPROVAL_FORM is the form of, as its ecs.requested carried it.
CARD = EcsRequested(
    execution_id="e1",
    session_id="s-1",
    kind="approval",
    args_hash="h1",
    requested_by=Principal(kind="agent", id="bot"),
    requested_at=1763780000.5,
)


async def test_the_executors_form_is_the_card_its_key_and_its_session() -> None:
    question = await open_question(NO_CARDS, executor(APPROVAL_FORM), "e1")
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
    question = await open_question(NO_CARDS, executor(APPROVAL_FORM | {"requested_by": requested_by}), "e1")
    assert question is not None
    assert question.card.requested_by == principal


async def test_an_answered_form_is_a_decided_card_and_a_form_without_a_time_is_keyed_by_its_kind() -> None:
    form = {k: v for k, v in APPROVAL_FORM.items() if k != "requested_at"} | {"status": "answered"}
    question = await open_question(NO_CARDS, executor(form), "e1")
    assert question is not None
    assert question.card.decided is True
    assert question.key == "approval"


async def test_no_form_is_no_open_question() -> None:
    assert await open_question(NO_CARDS, executor(None), "e1") is None


async def test_an_execution_the_executor_does_not_know_is_its_refusal() -> None:
    def unknown(payload: dict[str, Any]) -> Any:
        raise RpcError(404, "no execution e1")

    peers = InMemoryPeers(methods={("executor", "approvals.get"): unknown})
    with pytest.raises(RpcError) as refused:
        await open_question(NO_CARDS, peers, "e1")
    assert refused.value.status == 404


async def test_an_open_card_the_gateway_holds_is_the_question_the_executor_would_answer_without_asking_it() -> (
    None
):
    peers = executor(APPROVAL_FORM)
    question = await open_question(held(CARD), peers, "e1")
    assert peers.asked == []
    assert question == await open_question(NO_CARDS, executor(APPROVAL_FORM), "e1")


async def test_a_card_the_gateway_holds_closed_or_decided_is_asked_of_the_executor() -> None:
    answered = APPROVAL_FORM | {"status": "answered", "contract_status": "CANCELLED"}
    peers = executor(answered)
    question = await open_question(held(CARD, closed=True), peers, "e1")
    assert [asked.method for asked in peers.asked] == ["approvals.get"]
    assert question is not None
    assert (question.card.status, question.card.decided) == ("cancelled", True)


def firewall_replicas(told: list[list[dict[str, int]]], partial: list[dict[str, Any]]) -> InMemoryPeers:
    """A firewall of several replicas: ``policy.told`` answers each of ``told`` in turn (the last again)."""
    answers = iter(told)
    last: list[list[dict[str, int]]] = [told[-1]]

    def policy_told(payload: dict[str, Any]) -> Any:
        last[0] = next(answers, last[0])
        return last[0]

    def escalated(payload: dict[str, Any]) -> Any:
        return [{"to_role": "admin", "execution_ids": ids} for ids in ([], ["e2"])]

    return InMemoryPeers(
        methods={
            ("firewall", "policy.replace_admin"): lambda payload: {"admin": {"version": 3}},
            ("firewall", "policy.told"): policy_told,
            ("firewall", "audit.verify"): lambda payload: partial,
            ("firewall", "approvals.escalated"): escalated,
            ("executor", "approvals.pending"): lambda payload: [
                {"execution_id": "e1"},
                {"execution_id": "e2"},
            ],
        }
    )


async def test_a_policy_change_is_answered_once_every_firewall_replica_applied_it() -> None:
    behind = [{"policy": 3, "catalogue": 1}, {"policy": 2, "catalogue": 1}]
    caught_up = [{"policy": 3, "catalogue": 1}, {"policy": 3, "catalogue": 1}]
    peers = firewall_replicas([behind, behind, caught_up], [])
    answer = await change_policy(peers, "policy.replace_admin", {"policy": {}})
    assert answer == {"admin": {"version": 3}}
    assert [a.method for a in peers.asked].count("policy.told") == 3  # asked until none was behind


async def test_a_replica_that_never_catches_up_makes_the_answer_a_504_that_says_the_change_is_recorded() -> (
    None
):
    peers = firewall_replicas([[{"policy": 3, "catalogue": 1}, {"policy": 2, "catalogue": 1}]], [])
    with pytest.raises(RpcError) as late:
        await change_policy(peers, "policy.replace_admin", {"policy": {}}, catch_up_seconds=0.05)
    assert late.value.status == 504
    assert "recorded" in late.value.detail
    assert "replica(s) [1]" in late.value.detail


async def test_the_audit_chains_of_several_firewall_replicas_are_verified_together() -> None:
    intact = {"ok": True, "records": 4, "first_broken": None, "chain": 0}
    broken = {"ok": False, "records": 6, "first_broken": 2, "reason": "entry 2 rewritten", "chain": 1}
    alone = await audit_verification(firewall_replicas([[]], [intact]))
    assert alone == intact  # one firewall: its chain's verification as it is
    both = await audit_verification(firewall_replicas([[]], [intact, broken]))
    assert (both["ok"], both["records"], both["first_broken"], both["chain"]) == (False, 10, 2, 1)
    assert both["chains"] == [intact, broken]


async def test_the_questions_escalated_by_any_firewall_replica_come_first() -> None:
    pending = await pending_approvals(firewall_replicas([[]], []))
    assert [(item["execution_id"], item["escalated"]) for item in pending] == [("e2", True), ("e1", False)]


async def test_a_replica_that_cannot_say_how_far_it_is_keeps_the_change_from_being_called_in_force() -> None:
    def silent(payload: dict[str, Any]) -> Any:
        raise RpcError(503, "firewall could not answer policy.told in full (partition 1: no answer)")

    peers = firewall_replicas([[]], [])
    peers.methods[("firewall", "policy.told")] = silent
    with pytest.raises(RpcError) as late:
        await change_policy(peers, "policy.replace_admin", {"policy": {}}, catch_up_seconds=0.05)
    assert late.value.status == 504
    assert "partition 1: no answer" in late.value.detail
