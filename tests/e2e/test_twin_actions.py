"""Two identical irreversible actions through the whole stack: one card, one mail, no card left behind.

An agent proposes the same ``email.send`` twice over REST. The executor claims
the action's idempotency key when the first starts; the twin is refused at its
verdict (REJECTED, ``duplicate: …``) and never shows as a card. A card an
earlier version left open for a twin ends when it is approved after the first
completed, and leaves the gateway's and the firewall's pending lists.
"""

from __future__ import annotations

import asyncio
import email
from typing import Any

import httpx
import pytest

from overseer_events.catalogue import Principal
from overseer_firewall.adapters.pending_approvals import SqliteApprovals
from overseer_runtime.testing import eventually
from tests.e2e.e2e_support import FullStack
from tests.support.twin_cards import open_twin_card_as_before, twin_proposal_as_before

pytestmark = pytest.mark.slow


def invite(subject: str) -> dict[str, Any]:
    return {"to": "bob@example.com", "subject": subject, "body": "Shall we meet tomorrow at 10:00?"}


async def propose(agent: httpx.AsyncClient, session: str, args: dict[str, Any]) -> str:
    accepted = await agent.post(
        "/v1/actions", json={"session_id": session, "tool": "email.send", "args": args, "irreversible": True}
    )
    assert accepted.status_code == 202, accepted.text
    return str(accepted.json()["execution_id"])


async def view(client: httpx.AsyncClient, execution_id: str, until: str = "settled") -> dict[str, Any]:
    answer = await client.get(f"/v1/actions/{execution_id}", params={"wait": 20, "until": until})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def pending_cards(operator: httpx.AsyncClient) -> set[str]:
    cards = (await operator.get("/v1/approvals", params={"status": "pending"})).json()
    return {c["execution_id"] for c in cards}


def firewall_pending(full_stack: FullStack) -> set[str]:
    conn = full_stack.services.runtimes["firewall"].store.conn
    return {p.execution_id for p in SqliteApprovals(conn).pending()}


def mails_with_subject(full_stack: FullStack, subject: str) -> int:
    messages = (email.message_from_bytes(p.read_bytes()) for p in full_stack.sink.messages())
    return sum(1 for m in messages if m["Subject"] == subject)


async def approve(operator: httpx.AsyncClient, execution_id: str, args_hash: str) -> httpx.Response:
    return await operator.post(
        f"/v1/approvals/{execution_id}", json={"decision": "approve", "args_hash": args_hash}
    )


async def test_two_identical_sends_proposed_together_show_one_card_and_deliver_one_mail(
    full_stack: FullStack,
) -> None:
    args = invite("Twins proposed together")
    async with full_stack.client("agent") as agent, full_stack.client("operator") as operator:
        first, second = await asyncio.gather(
            propose(agent, "twins-together", args), propose(agent, "twins-together", args)
        )
        views = {x: await view(agent, x) for x in (first, second)}
        assert sorted(v["consequence_label"] for v in views.values()) == ["REJECTED", "WAITING"]
        card, twin = (first, second) if views[first]["consequence_label"] == "WAITING" else (second, first)
        assert views[twin]["error_message"].startswith(
            f"duplicate: an identical irreversible action is in flight as {card} (waiting"
        )
        assert views[twin]["has_side_effects"] is False

        cards = await pending_cards(operator)
        assert card in cards
        assert twin not in cards
        await eventually(lambda: twin not in firewall_pending(full_stack), timeout=20)
        form = (await operator.get("/v1/approvals")).json()
        (args_hash,) = [c["args_hash"] for c in form if c["execution_id"] == card]

        refused = await approve(operator, twin, args_hash)  # the twin has no card to approve
        assert refused.status_code in (404, 409), refused.text
        assert (await approve(operator, card, args_hash)).status_code == 200
        done = await view(agent, card, until="terminal")
        assert done["consequence_label"] == "SUCCESS"
        assert (await view(agent, twin))["consequence_label"] == "REJECTED"
        assert not {card, twin} & await pending_cards(operator)
    assert mails_with_subject(full_stack, args["subject"]) == 1


async def test_approving_a_card_whose_twin_already_completed_ends_the_card_with_a_clear_reason(
    full_stack: FullStack,
) -> None:
    session = "twin-card-after-completion"
    args = invite("A twin card left open")
    executor = full_stack.services.runtimes["executor"]
    async with full_stack.client("agent") as agent, full_stack.client("operator") as operator:
        first = await propose(agent, session, args)
        assert (await view(agent, first))["consequence_label"] == "WAITING"
        twin = "twin-" + first
        proposer = Principal(kind="agent", id="agent")
        await executor.execute(lambda uow: open_twin_card_as_before(uow, twin, session, args, proposer))
        # The firewall held the twin then: its verdict opens the request the answer is bound to.
        await full_stack.stack.publish_as("gateway", twin_proposal_as_before(twin, session, args, proposer))
        await eventually(lambda: twin in firewall_pending(full_stack), timeout=20)
        cards = (await operator.get("/v1/approvals")).json()
        hashes = {c["execution_id"]: c["args_hash"] for c in cards if c["execution_id"] in (first, twin)}
        assert set(hashes) == {first, twin}

        assert (await approve(operator, first, hashes[first])).status_code == 200
        assert (await view(agent, first, until="terminal"))["consequence_label"] == "SUCCESS"

        answered = await approve(operator, twin, hashes[twin])
        assert answered.status_code == 200, answered.text
        ended = await view(agent, twin, until="terminal")
        assert ended["consequence_label"] == "REJECTED"
        assert ended["error_message"].startswith(
            f"duplicate: an identical irreversible action already completed as {first}"
        )
        assert "but not run" in ended["error_message"]
        assert twin not in await pending_cards(operator)
        assert twin not in firewall_pending(full_stack)
        again = await operator.post(
            f"/v1/approvals/{twin}", json={"decision": "reject", "args_hash": hashes[twin]}
        )
        assert again.status_code == 409  # ended: nothing is left to decide
    assert mails_with_subject(full_stack, args["subject"]) == 1
