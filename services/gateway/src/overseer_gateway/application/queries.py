"""Queries answered by asking the owning service, waiting on events rather than polling."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from overseer_events.catalogue import Principal, form_aggregate
from overseer_events.machines import ExecutionStatus
from overseer_events.views import Until
from overseer_gateway.application.ports import KnownTools, NoticeBook, Peers, SettledViews
from overseer_gateway.domain.approvals import AgentRun, ApprovalCard
from overseer_gateway.domain.notices import Card
from overseer_gateway.domain.tools import closest_tools, unknown_tool
from overseer_runtime.rpc import RpcError
from overseer_runtime.unit_of_work import WaitForChange


async def consequence_when_settled(
    peers: Peers,
    execution_id: str,
    *,
    wait: float,
    until: Until,
    session_id: str | None = None,
    told: SettledViews | None = None,
) -> dict[str, Any] | None:
    """The execution's consequence view as soon as it reaches ``until`` (terminal; or WAITING for a person,
    ``settled``; or running, ``started``), else as it is after ``wait`` seconds.

    The executor does the waiting: it commits every move of the execution and answers right after
    the commit that settles it, before the event has reached anyone else. None when it does not know
    the execution by then. ``session_id``, when known, lets a replica of the executor that does not
    hold that session say so at once.

    ``told``, for a call the gateway has just proposed: the executor is not asked. It tells the view of
    an external agent's call the moment the call settles (WAITING for a person, or ended), and that is
    the answer. Should none come within ``wait`` seconds (it is sent at most once, and a reconnect can
    lose it), the executor is asked how the call stands then; a wait ``until`` it starts, which nothing
    tells, is asked of the executor from the start.
    """
    if told is not None and until != "started":
        told_view = await told.settled(execution_id, until, wait)
        if told_view is not None:
            return told_view
        wait = 0.0
    payload: dict[str, Any] = {"execution_id": execution_id, "wait": wait, "until": until}
    if session_id is not None:
        payload["session_id"] = session_id
    try:
        view: dict[str, Any] = await peers.ask("executor", "consequence", payload, timeout=wait + 5.0)
    except RpcError as exc:
        if exc.status != 404:
            raise
        return None
    return view


async def pending_approvals(peers: Peers) -> list[dict[str, Any]]:
    """Every open question for a person, as the executor lists them, each marked ``escalated`` when the
    firewall has escalated it to an admin (nobody answered it in time: an admin is the decider of last
    resort). Escalated questions come first, oldest first, then the rest in the executor's order."""
    items, escalations = await asyncio.gather(
        peers.ask("executor", "approvals.pending", {}),
        peers.ask("firewall", "approvals.escalated", {}),  # each firewall replica's, of its sessions
    )
    ids = [execution_id for replica in escalations for execution_id in replica["execution_ids"]]
    escalated = {str(execution_id): n for n, execution_id in enumerate(ids)}
    marked = [{**item, "escalated": item["execution_id"] in escalated} for item in items]
    return sorted(marked, key=lambda item: escalated.get(item["execution_id"], len(escalated)))


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """An execution's approval card as the executor shows it, the card's key, and its session."""

    card: ApprovalCard
    key: str
    session_id: str | None


async def open_question(cards: NoticeBook, peers: Peers, execution_id: str) -> OpenQuestion | None:
    """The open question on ``execution_id``: the card the gateway holds while it is open (the executor's
    ``ecs.requested``, not yet closed nor answered: see :class:`NoticeBook`), else as the executor
    answers it (``approvals.get``); None when it answers none.

    A card the gateway holds open is the executor's form as it was requested: the executor keeps it
    pending until its contract leaves WAITING, and says so with ``ecs.closed``. Any other case (a card not
    taken in yet, a closed or decided one) is asked of the executor, which refuses (404 for an execution
    it does not know) by raising :class:`RpcError`."""
    card = cards.open_card(execution_id)
    if card is not None:
        return question_of_card(card)
    answer = await peers.ask("executor", "approvals.get", {"execution_id": execution_id})
    if not isinstance(answer, dict):
        return None
    return question_from(answer, execution_id)


async def card_closed(
    cards: NoticeBook, wait_for_change: WaitForChange, execution_id: str, timeout: float
) -> bool:
    """Wait, at most ``timeout`` seconds, until the gateway holds no open card for ``execution_id`` (the
    executor's ``ecs.closed`` applied); False when one is still open then."""
    deadline = time.monotonic() + timeout
    while (card := cards.open_card(execution_id)) is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        # No await between the read above and this wait: the commit applying the close wakes this.
        await wait_for_change(form_aggregate(execution_id, card.requested_at), remaining)
    return True


def question_of_card(card: Card) -> OpenQuestion:
    """An open card as the question the executor would answer for it: WAITING, undecided (same key)."""
    waiting = ApprovalCard(
        execution_id=card.execution_id,
        kind=card.kind,
        status=ExecutionStatus.WAITING.value,
        args_hash=card.args_hash,
        requested_by=card.requested_by,
    )
    return OpenQuestion(waiting, question_key(card.kind, card.requested_at), card.session_id)


def question_key(kind: str, requested_at: float | None) -> str:
    """The key of a card: its kind and when it was requested (a second card of one execution, another)."""
    return f"{kind}@{requested_at}" if requested_at is not None else kind


def question_from(answer: dict[str, Any], execution_id: str) -> OpenQuestion:
    """The executor's form (``approvals.get``) as an :class:`OpenQuestion`.

    The form's ``status`` is ``pending`` or ``answered``; ``contract_status`` is the contract's state.
    ``requested_by`` is ``"<kind>:<id>"`` (or a principal object).
    """
    requested = answer.get("requested_by")
    requester: Principal | None = None
    if isinstance(requested, dict) and "id" in requested:
        requester = Principal(kind=str(requested.get("kind", "agent")), id=str(requested["id"]))
    elif isinstance(requested, str) and requested:
        kind, _, ident = requested.partition(":")
        requester = Principal(kind=kind if ident else "agent", id=ident or kind)
    kind = str(answer.get("kind", "approval"))
    requested_at = answer.get("requested_at")
    card = ApprovalCard(
        execution_id=execution_id,
        kind=kind,
        status=str(answer.get("contract_status") or "unknown").lower(),
        args_hash=str(answer.get("args_hash", "")),
        requested_by=requester,
        decided=answer.get("status") == "answered",
    )
    return OpenQuestion(card, question_key(kind, requested_at), answer.get("session_id"))


@dataclass(frozen=True, slots=True)
class UnknownTool:
    """Why a proposal's tool is refused, and the registered tools closest to it."""

    detail: str
    closest: list[str]


async def unregistered_tool(tools: KnownTools, tool: str) -> UnknownTool | None:
    """None when the executor has registered ``tool`` (or cannot say: the firewall then holds what it does
    not know); else why not. A name missing from the kept list is asked about again before it is refused,
    so a tool an MCP server registered a moment ago is accepted."""
    for fresh in (False, True):
        names = await tools.names(fresh=fresh)
        if names is None or tool in names:
            return None
    assert names is not None
    return UnknownTool(unknown_tool(tool, names), closest_tools(tool, names))


async def agent_run(peers: Peers, execution_id: str) -> AgentRun | None:
    """The call as the agent that runs it sees it (the executor's contract), None when it is not known."""
    try:
        contract: dict[str, Any] = await peers.ask("executor", "contract.get", {"execution_id": execution_id})
    except RpcError as exc:
        if exc.status != 404:
            raise
        return None
    verdict = contract.get("verdict") or {}
    return AgentRun(
        execution_id=execution_id,
        runs_at=str(contract.get("runs_at", "executor")),
        proposer=str(contract["proposer"]),
        status=str(contract["status"]),
        args=dict(verdict.get("args") or contract.get("args") or {}),
        args_hash=verdict.get("args_hash"),
        error=contract.get("error_message"),
        verdict=verdict.get("decision"),
        session_id=contract.get("session_id"),
    )


async def audit_verification(peers: Peers) -> dict[str, Any]:
    """The audit chain recomputed and checked against its published heads. A firewall running as
    several replicas keeps one chain per replica: each is verified, ``ok`` only when every one is,
    ``records`` counted over all, the first broken chain's findings on top and each under ``chains``."""
    chains: list[dict[str, Any]] = await peers.ask("firewall", "audit.verify", {})
    if len(chains) == 1:
        return chains[0]
    broken = next((chain for chain in chains if not chain["ok"]), None)
    total = sum(int(chain["records"]) for chain in chains)
    return {**(broken or chains[0]), "ok": broken is None, "records": total, "chains": chains}


async def policy_replay(peers: Peers, candidate: dict[str, Any]) -> dict[str, Any]:
    """Which recorded proposals ``candidate`` would judge differently: each firewall replica replays the
    proposals of its own sessions, and their reports are joined."""
    reports: list[dict[str, Any]] = await peers.ask("firewall", "policy.replay", {"policy": candidate})
    return {
        **reports[0],
        "evaluated": sum(int(report["evaluated"]) for report in reports),
        "changed": [change for report in reports for change in report["changed"]],
    }
