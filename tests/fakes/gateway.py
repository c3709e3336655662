"""The gateway's ports in memory, each passing the contract suite its adapter passes (tests/contracts).

:class:`InMemoryGateway` is the gateway's store seen through its ports: the transactions
(:meth:`InMemoryGateway.execute`) with their outbox and recorded responses, and the events stream its
committed events reach (:class:`InMemoryLiveEvents`). :class:`InMemoryPeers` answers for the other
services; :class:`InMemoryCallers` knows the bearer tokens. :class:`FakeGateway` puts them together as
the routes see the gateway (``overseer_gateway.entrypoints.context.Gateway``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import orjson
from starlette.websockets import WebSocket

from overseer_events.catalogue import AnswerReceived, HumanResponded, OutcomeReported
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import SERVICES, NotOwner, Subjects, owns, type_of_subject
from overseer_events.views import Until, view_has_reached
from overseer_gateway.adapters.proposed_sessions import RecentProposals
from overseer_gateway.application.ports import BadLink, GatewayUnit
from overseer_gateway.domain.access import Caller
from overseer_gateway.domain.approvals import card_of
from overseer_gateway.domain.chat import MessageLimits
from overseer_gateway.domain.notices import Card, Delivery, LinkClaim, link_id_of
from overseer_gateway.domain.patterns import SubjectFilter
from overseer_runtime.metrics import merge_expositions, up_exposition
from overseer_runtime.rpc import RpcError
from overseer_runtime.unit_of_work import Emit

T = TypeVar("T")
SERVICE = "gateway"


# -- the store: transactions, outbox, recorded responses -----------------------------------------
class InMemoryGateway:
    """The gateway's committed events, the decisions they record, and the stream they are relayed to."""

    def __init__(self, subjects: Subjects | None = None) -> None:
        self.subjects = subjects or Subjects()
        self.events: list[Envelope] = []
        self.responded: set[tuple[str, str]] = set()
        self.answered: set[tuple[str, str]] = set()
        self.outcomes: set[str] = set()
        self.links_used: set[str] = set()
        self.stream = InMemoryLiveEvents(self.subjects.namespace)

    async def execute(self, command: Callable[[GatewayUnit], T]) -> T:
        """One transaction: what ``command`` emits is committed when it returns, and nothing if it raises."""
        outbox = InMemoryOutbox(self)
        result = command(GatewayUnit(emit_as=outbox.emit_as, responses=InMemoryResponses(self, outbox)))
        for event in outbox.pending:
            self.events.append(event)
            if isinstance(event.data, HumanResponded):
                self.responded.add((event.data.execution_id, card_of(event.aggregate_id)))
                if event.data.link_id is not None:
                    self.links_used.add(event.data.link_id)
            if isinstance(event.data, AnswerReceived):
                self.answered.add((event.data.session_id, event.data.request_id))
            if isinstance(event.data, OutcomeReported):
                self.outcomes.add(event.data.execution_id)
            self.stream.store(self.subjects.event(SERVICE, event.type), event.encode())
        return result

    def last_version(self, aggregate_id: str) -> int:
        return max((e.aggregate_version for e in self.events if e.aggregate_id == aggregate_id), default=0)


class InMemoryOutbox:
    """The events one transaction emits, as the runtime's unit of work appends them (``emit_as``: its
    :class:`~overseer_runtime.unit_of_work.Emit`, the actor bound)."""

    def __init__(self, store: InMemoryGateway) -> None:
        self.store = store
        self.pending: list[Envelope] = []

    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        actor: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
    ) -> Envelope:
        if not owns(SERVICE, data.TYPE):
            raise NotOwner(SERVICE, data.TYPE)
        if aggregate_version is None:
            pending = [e.aggregate_version for e in self.pending if e.aggregate_id == aggregate_id]
            aggregate_version = max(pending, default=self.store.last_version(aggregate_id)) + 1
        event = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version,
            actor=actor,
            correlation_id=correlation_id,
        )
        self.pending.append(event)
        return event

    def emit_as(self, actor: str) -> Emit:
        return partial(self.emit, actor=actor)


class InMemoryResponses:
    """The recorded decisions as one transaction sees them, its own emits included."""

    def __init__(self, store: InMemoryGateway, outbox: InMemoryOutbox) -> None:
        self.store = store
        self.outbox = outbox

    def already_responded(self, execution_id: str, card: str) -> bool:
        pending = {
            (e.data.execution_id, card_of(e.aggregate_id))
            for e in self.outbox.pending
            if isinstance(e.data, HumanResponded)
        }
        return (execution_id, card) in self.store.responded | pending

    def already_answered(self, session_id: str, request_id: str) -> bool:
        pending = {
            (e.data.session_id, e.data.request_id)
            for e in self.outbox.pending
            if isinstance(e.data, AnswerReceived)
        }
        return (session_id, request_id) in self.store.answered | pending

    def outcome_reported(self, execution_id: str) -> bool:
        pending = {e.data.execution_id for e in self.outbox.pending if isinstance(e.data, OutcomeReported)}
        return execution_id in self.store.outcomes | pending

    def link_used(self, link_id: str) -> bool:
        pending = {e.data.link_id for e in self.outbox.pending if isinstance(e.data, HumanResponded)}
        return link_id in self.store.links_used | pending


# -- the events stream --------------------------------------------------------------------------
class InMemoryLiveEvents:
    """The events stream: every stored event has the next sequence number; feeds follow it."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.stored: list[tuple[str, bytes]] = []  # (subject, event JSON); sequence = index + 1
        self.feeds: set[InMemoryFeed] = set()

    def store(self, subject: str, data: bytes) -> int:
        self.stored.append((subject, data))
        for feed in self.feeds:
            feed.grown.set()
        return len(self.stored)

    async def open(
        self, subject_filter: SubjectFilter, session: str | None, since: int | None
    ) -> InMemoryFeed:
        feed = InMemoryFeed(self, subject_filter, session, len(self.stored) if since is None else since)
        self.feeds.add(feed)
        return feed


class InMemoryFeed:
    def __init__(
        self, stream: InMemoryLiveEvents, subject_filter: SubjectFilter, session: str | None, cursor: int
    ) -> None:
        self.stream = stream
        self.filter = subject_filter
        self.session = session
        self.cursor = cursor
        self.grown = asyncio.Event()

    async def frames(self) -> AsyncIterator[bytes]:
        while True:
            while self.cursor < len(self.stream.stored):
                self.cursor += 1
                subject, data = self.stream.stored[self.cursor - 1]
                event = orjson.loads(data)
                if self.filter.matches(subject) and self.session in (None, event.get("correlation_id")):
                    yield orjson.dumps(
                        {
                            "seq": self.cursor,
                            "subject": subject,
                            "type": type_of_subject(subject),
                            "event": event,
                        }
                    )
            self.grown.clear()
            if self.cursor >= len(self.stream.stored):
                await self.grown.wait()

    async def close(self) -> None:
        self.stream.feeds.discard(self)


# -- the other services -------------------------------------------------------------------------
Method = Callable[[dict[str, Any]], Any]


@dataclass
class Asked:
    service: str
    method: str
    payload: dict[str, Any]
    timeout: float | None


@dataclass
class InMemoryPeers:
    """The other services: ``methods`` answer by (service, method); a method nobody serves is 503.

    A method refuses by raising :class:`RpcError`. ``running`` services are ``ok`` in :meth:`health`,
    the others ``down``; the gateway itself is ``status``."""

    methods: dict[tuple[str, str], Method] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    status: str = "ok"
    asked: list[Asked] = field(default_factory=list)

    async def ask(
        self, service: str, method: str, payload: dict[str, Any] | None = None, timeout: float | None = None
    ) -> Any:
        self.asked.append(Asked(service, method, dict(payload or {}), timeout))
        answer = self.methods.get((service, method))
        if answer is None:
            raise RpcError(503, f"{service} is not reachable: NoRespondersError")
        return answer(dict(payload or {}))

    async def health(self) -> dict[str, str]:
        return {
            name: self.status if name == SERVICE else ("ok" if name in self.running else "down")
            for name in SERVICES
        }

    async def metrics(self) -> str:
        """What each service's ``metrics`` method answers, merged, with who answered."""
        texts: dict[str, str | None] = {}
        for name in SERVICES:
            try:
                texts[name] = str((await self.ask(name, "metrics"))["exposition"])
            except RpcError:
                texts[name] = None
        answered = {name: text is not None for name, text in texts.items()}
        return merge_expositions([*(t for t in texts.values() if t is not None), up_exposition(answered)])


# What the executor's ``approvals.get`` answers for an approval card waiting for a person.
APPROVAL_FORM: dict[str, Any] = {
    "execution_id": "e1",
    "kind": "approval",
    "status": "pending",
    "contract_status": "WAITING",
    "args_hash": "h1",
    "requested_at": 1763780000.5,
    "requested_by": "agent:bot",
    "session_id": "s-1",
}


# -- who calls ----------------------------------------------------------------------------------
class InMemoryCallers:
    """token -> caller."""

    def __init__(self, callers: Mapping[str, Caller]) -> None:
        self.callers = dict(callers)

    def identify(self, presented: str | None) -> Caller | None:
        return self.callers.get(presented) if presented else None

    def named(self, name: str) -> Caller | None:
        return next((caller for caller in self.callers.values() if caller.name == name), None)


class InMemoryLinks:
    """:class:`LinkSigner`: tokens issued here, each standing for its claim; ``expire`` makes one old."""

    def __init__(self) -> None:
        self.claims: dict[str, LinkClaim] = {}
        self.expired: set[str] = set()

    def issue(self, claim: LinkClaim) -> str:
        token = f"link-token-{len(self.claims) + 1:08d}"
        self.claims[token] = replace(claim, link_id=link_id_of(token), expires_at=time.time() + 3600)
        return token

    def read(self, token: str) -> LinkClaim:
        if token in self.expired:
            raise BadLink(410, "this approval link has expired")
        claim = self.claims.get(token)
        if claim is None:
            raise BadLink(404, "this is not an approval link Overseer issued, or it was changed")
        return claim


class InMemoryNoticeBook:
    """:class:`NoticeBook`: the cards and deliveries a test puts in."""

    def __init__(self) -> None:
        self.cards: dict[str, Card] = {}
        self.closed: set[str] = set()  # the executions whose card is closed or decided
        self.deliveries: list[Delivery] = []

    def due(self, now: float, limit: int = 64) -> list[Delivery]:
        return self.deliveries[:limit]

    def card(self, execution_id: str) -> Card | None:
        return self.cards.get(execution_id)

    def open_card(self, execution_id: str) -> Card | None:
        return None if execution_id in self.closed else self.cards.get(execution_id)

    def attempts(self, execution_id: str) -> list[dict[str, object]]:
        return [
            {"delivery_id": d.delivery_id, "notice": d.notice, "channel": d.channel, "attempts": d.attempts}
            for d in self.deliveries
            if d.execution_id == execution_id
        ]


# -- the gateway as the routes see it -------------------------------------------------------------
class InMemoryTools:
    """:class:`KnownTools`: ``names`` registered (None: the executor cannot say); ``registered`` become
    known once the gateway asks afresh, as a tool an MCP server just added."""

    def __init__(self, names: frozenset[str] | None, registered: frozenset[str] = frozenset()) -> None:
        self.known = names
        self.registered = registered
        self.asked: list[bool] = []

    async def names(self, *, fresh: bool = False) -> frozenset[str] | None:
        self.asked.append(fresh)
        if fresh and self.known is not None:
            self.known = self.known | self.registered
        return self.known


@dataclass
class InMemorySettledViews:
    """:class:`~overseer_gateway.application.ports.SettledViews` where every call is told as :attr:`told`
    says (set by the test, as the executor would tell it; its ``execution_id`` made the call's), or is
    never told (None: a wait ends at once, as if its time ran out). Each wait is kept in :attr:`waits`."""

    told: dict[str, Any] | None = None
    waits: list[tuple[str, str, float]] = field(default_factory=list)

    async def settled(self, execution_id: str, until: Until, timeout: float) -> dict[str, Any] | None:
        self.waits.append((execution_id, until, timeout))
        view = self.told
        if view is None or not view_has_reached(view, until):
            return None
        return {**view, "execution_id": execution_id}


@dataclass
class FakeGateway:
    """``entrypoints.context.Gateway`` made of the in-memory ports."""

    tokens: InMemoryCallers
    store: InMemoryGateway = field(default_factory=InMemoryGateway)
    peers: InMemoryPeers = field(default_factory=InMemoryPeers)
    tools: InMemoryTools = field(default_factory=lambda: InMemoryTools(None))
    max_wait: float = 60.0
    audit_chains: int = 1
    connected: bool = True
    sockets: set[WebSocket] = field(default_factory=set)
    message_limits: MessageLimits = field(default_factory=lambda: MessageLimits(16_000, 16))
    sandbox: str = "/srv/overseer/sandbox"
    links: InMemoryLinks = field(default_factory=InMemoryLinks)
    notices: InMemoryNoticeBook = field(default_factory=InMemoryNoticeBook)
    proposed: RecentProposals = field(default_factory=RecentProposals)
    settled: InMemorySettledViews = field(default_factory=InMemorySettledViews)

    @property
    def live(self) -> InMemoryLiveEvents:
        return self.store.stream

    async def execute(self, command: Callable[[GatewayUnit], T]) -> T:
        return await self.store.execute(command)

    async def wait_for_change(self, aggregate_id: str, timeout: float) -> bool:
        """Nothing commits behind a test's back: the wait runs out."""
        await asyncio.sleep(timeout)
        return False

    def bus_connected(self) -> bool:
        return self.connected
