"""The firewall's ports in memory, and :class:`InMemoryFirewall`: its real handlers run on them.

Each in-memory read model changes with each event exactly as its SQL projection does
(``overseer_firewall/adapters/``), which the contract suites ``tests/contracts/test_firewall_*``
check on both. :class:`InMemoryFirewall` plays the runtime's part: an incoming event reaches the
read models first, then its handler runs in a unit of work whose events reach the read models as
they are emitted, and whose after-commit work runs once the handler returned.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    AnswerReceived,
    ApprovalEscalated,
    AuditHeadPublished,
    AuditRecorded,
    CatalogueChanged,
    ContractCreated,
    ExecutionProposed,
    ExecutionTransitioned,
    HintIssued,
    HumanDecisionRecorded,
    HumanResponded,
    PathGranted,
    Principal,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_events.catalogue import PathGrant as PathGrantAsked
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.errors import ConcurrencyError
from overseer_events.machines import ExecutionStatus
from overseer_events.subjects import KEPT_IN_STORE, owns
from overseer_firewall.application.anchoring import HEAD_AGGREGATE, AuditAnchor
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.application.ports import (
    POLICY_AGGREGATES,
    FirewallUnit,
    PolicyRows,
    PublishedEntry,
    RecordedCatalogue,
    StoredProposal,
    Surroundings,
)
from overseer_firewall.application.state import TERMINAL, KernelState
from overseer_firewall.application.translation import mode_setting, path_grant, proposal_from_event
from overseer_firewall.domain.audit import AuditEntry, AuditHead, record_text
from overseer_firewall.domain.budgets import Usage
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.gate import (
    PendingApproval,
    PendingStatus,
    SessionState,
    kind_asked_on_hold,
    kind_asked_on_suspend,
)
from overseer_firewall.domain.grants import PathGrant
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import Finding
from overseer_firewall.domain.modes import ModeSetting
from overseer_firewall.domain.policy import UserLevel, previous_level
from overseer_firewall.domain.preview import ABSENT, CurrentFile
from overseer_firewall.domain.replay import RecordedProposal
from overseer_firewall.entrypoints.events import handlers
from overseer_runtime.unit_of_work import UnitOfWork
from tests.fakes.runtime import FakeUnitOfWork

T = TypeVar("T")
ACTOR = "firewall"
AGENT = Principal(kind="agent", id="agent")
OPERATOR = Principal(kind="operator", id="alice")
WAITING = ExecutionStatus.WAITING.value


# ------------------------------------------------------------------------ proposals ---
@dataclass
class _ProposalRow:
    proposal: StoredProposal
    findings: list[dict[str, Any]]


class InMemoryProposals:
    """``fw_proposals``: :class:`Proposals` and :class:`ProposalHistory` at once."""

    def __init__(self) -> None:
        self._rows: dict[str, _ProposalRow] = {}  # insertion order is the table's seq

    def apply(self, event: Envelope) -> None:
        data = event.data
        if isinstance(data, ExecutionProposed) and data.execution_id not in self._rows:
            proposal = proposal_from_event(data, event.occurred_at)
            self._rows[data.execution_id] = _ProposalRow(StoredProposal(proposal, None, None, None), [])
        elif isinstance(data, VerdictIssued) and data.execution_id in self._rows:
            row = self._rows[data.execution_id]
            row.proposal = replace(
                row.proposal, level=data.level, decision=data.decision, args_hash=data.args_hash
            )
            row.findings = [f.model_dump(mode="json") for f in data.findings]

    def action_type(self, execution_id: str) -> str | None:
        row = self._rows.get(execution_id)
        return row.proposal.proposal.action_type if row else None

    def has_verdict(self, execution_id: str) -> bool:
        row = self._rows.get(execution_id)
        return row is not None and row.proposal.decision is not None

    def get(self, execution_id: str) -> StoredProposal | None:
        row = self._rows.get(execution_id)
        return row.proposal if row else None

    async def recorded(self, limit: int) -> list[RecordedProposal]:
        judged = [
            (row, row.proposal.decision) for row in self._rows.values() if row.proposal.decision is not None
        ]
        return [
            RecordedProposal(
                row.proposal.proposal,
                Level.parse(str(row.proposal.level)),
                Decision(decision),
                tuple(
                    Finding(f["layer"], f["outcome"], f.get("message", ""), f.get("details") or {})
                    for f in row.findings
                ),
            )
            for row, decision in judged[-limit:]
        ]


# ------------------------------------------------------------------------ approvals ---
def _ends(data: ExecutionTransitioned | ContractCreated) -> bool:
    """Whether ``data`` ends its contract: a terminal move, or an announcement carrying one."""
    if isinstance(data, ExecutionTransitioned):
        return data.to_status in TERMINAL
    return data.ended is not None


class InMemoryApprovals:
    """``fw_approvals``: :class:`Approvals`. A held verdict asks ``proposals`` for its action type."""

    def __init__(self, proposals: InMemoryProposals) -> None:
        self._proposals = proposals
        self._rows: dict[str, PendingApproval] = {}

    def apply(self, event: Envelope) -> None:
        data = event.data
        if isinstance(data, VerdictIssued):
            self._held(data, event)
        elif isinstance(data, ExecutionTransitioned) and data.to_status == WAITING:
            self._suspended(data)
        elif isinstance(data, HumanDecisionRecorded):
            self._close(data.execution_id, PendingStatus.DECIDED)
        elif isinstance(data, ApprovalEscalated) and data.execution_id in self._rows:
            self._rows[data.execution_id] = replace(self._rows[data.execution_id], escalated=True)
        elif isinstance(data, ExecutionTransitioned | ContractCreated) and _ends(data):
            self._close(data.execution_id, PendingStatus.CLOSED)

    def _held(self, data: VerdictIssued, event: Envelope) -> None:
        if data.decision != "hold" or data.execution_id in self._rows:
            return
        kind = kind_asked_on_hold(self._proposals.action_type(data.execution_id) or "tool_call")
        self._rows[data.execution_id] = PendingApproval(
            execution_id=data.execution_id,
            session_id=data.session_id,
            kind=kind,
            tool=data.tool,
            args_hash=data.args_hash,
            level=Level.parse(data.level) if data.level else None,
            requested_by=str(data.requested_by) if data.requested_by else "unknown:unknown",
            requested_at=event.occurred_at,
            status=PendingStatus.PENDING,
            escalated=False,
        )

    def _suspended(self, data: ExecutionTransitioned) -> None:
        row = self._rows.get(data.execution_id)
        judged = self._proposals.get(data.execution_id)
        if row is not None and row.status is PendingStatus.PENDING:
            return
        if judged is None or judged.args_hash is None:
            return  # nothing judged to bind an answer to: any answer is refused
        kind = kind_asked_on_suspend(judged.proposal.action_type)
        if row is None:
            self._rows[data.execution_id] = PendingApproval(
                execution_id=data.execution_id,
                session_id=judged.proposal.session_id,
                kind=kind,
                tool=judged.proposal.tool,
                args_hash=judged.args_hash,
                level=Level.parse(judged.level) if judged.level else None,
                requested_by=judged.proposal.proposer,
                requested_at=data.timestamp,
                status=PendingStatus.PENDING,
                escalated=False,
            )
        else:
            self._rows[data.execution_id] = replace(
                row, kind=kind, status=PendingStatus.PENDING, requested_at=data.timestamp, escalated=False
            )

    def _close(self, execution_id: str, status: PendingStatus) -> None:
        """A pending request answered (decided) or ended with its contract (closed)."""
        row = self._rows.get(execution_id)
        if row is not None and row.status is PendingStatus.PENDING:
            self._rows[execution_id] = replace(row, status=status)

    def get(self, execution_id: str) -> PendingApproval | None:
        return self._rows.get(execution_id)

    def pending(self) -> list[PendingApproval]:
        waiting = [row for row in self._rows.values() if row.status is PendingStatus.PENDING]
        return sorted(waiting, key=lambda row: row.requested_at)

    async def escalated(self) -> list[str]:
        """:class:`Escalations`: the pending requests escalated to an admin."""
        return [row.execution_id for row in self.pending() if row.escalated]


# --------------------------------------------------------------------------- policy ---
class InMemoryPolicyState:
    """The policy read models: :class:`PolicyState`, and :class:`PathGrants` (``fw_path_grants``)."""

    def __init__(self) -> None:
        self._admin: dict[int, dict[str, Any]] = {}
        self._user_version = 0
        self._levels: dict[str, UserLevel] = {}
        self._modes: dict[str, ModeSetting] = {}
        self._sessions: dict[str, SessionState] = {}
        self._grants: dict[str, PathGrant] = {}  # by request id, in the order recorded
        self._hints: dict[tuple[str, str], dict[str, Any]] = {}
        self._catalogue: RecordedCatalogue | None = None
        self._usage: dict[str, Usage] = {}
        self._versions = dict.fromkeys(POLICY_AGGREGATES, 0)
        self._previous = dict.fromkeys(POLICY_AGGREGATES, 0)

    def apply(self, event: Envelope) -> None:
        data = event.data
        if event.aggregate_id in POLICY_AGGREGATES:
            aggregate = event.aggregate_id
            self._previous[aggregate] = self._versions[aggregate]
            self._versions[aggregate] = max(self._versions[aggregate], event.aggregate_version)
        if isinstance(data, CatalogueChanged | ToolChangeAccepted):
            self._record_catalogue(data)
        elif isinstance(data, VerdictIssued | ExecutionProposed):
            self._record_usage(data)
        elif isinstance(data, AdminPolicyReplaced):
            self._admin[data.version] = orjson.loads(orjson.dumps(data.policy))
        elif isinstance(data, UserLevelChanged):
            self._user(data)
        elif isinstance(data, AgentModeSet):
            self._modes[data.principal] = mode_setting(data.mode, data.grant or None)
        elif isinstance(data, SessionPaused | SessionCancelRequested | SessionResumed):
            self._record_session(data)
        elif isinstance(data, PathGranted):
            self._grants.setdefault(data.request_id, path_grant(data))
        elif isinstance(data, HintIssued):
            self._hints.pop((data.tool, data.kind), None)  # a replaced hint is a new row
            self._hints[(data.tool, data.kind)] = {
                "tool": data.tool,
                "kind": data.kind,
                "message": data.message,
                "at": event.occurred_at,
            }

    def _record_session(self, data: SessionPaused | SessionCancelRequested | SessionResumed) -> None:
        if isinstance(data, SessionResumed):
            self._sessions.pop(data.session_id, None)
            return
        was = self._sessions.get(data.session_id, SessionState(True, 0))
        aborts = max(was.aborts, 1) if isinstance(data, SessionPaused) else was.aborts + 1
        self._sessions[data.session_id] = SessionState(True, aborts)

    def _record_usage(self, data: VerdictIssued | ExecutionProposed) -> None:
        was = self._usage.get(data.session_id, Usage())
        if isinstance(data, VerdictIssued):
            if data.tool is not None:
                self._usage[data.session_id] = Usage(was.calls + 1, was.tokens)
        elif data.model_tokens:
            self._usage[data.session_id] = Usage(was.calls, max(was.tokens, data.model_tokens))

    def _record_catalogue(self, data: CatalogueChanged | ToolChangeAccepted) -> None:
        if isinstance(data, CatalogueChanged):
            self._catalogue = RecordedCatalogue(
                list(data.tools), dict(data.withdrawn), dict(data.accepted), dict(data.unreviewed)
            )
            return
        self._catalogue = self.current().with_change_accepted(data.tool, data.fingerprint)

    def _user(self, data: UserLevelChanged) -> None:
        self._user_version += 1
        current = self._levels.get(data.tool)
        if data.after is None:
            self._levels.pop(data.tool, None)
            return
        after = Level.parse(data.after)
        before = Level.parse(data.before) if data.before else None
        self._levels[data.tool] = UserLevel(
            after, previous_level(current, before, after), data.trigger, data.hint
        )

    async def rows(self) -> PolicyRows:
        version = max(self._admin, default=None)
        return PolicyRows(
            admin_version=version,
            admin_policy=self._admin[version] if version is not None else None,
            user_version=self._user_version,
            user_levels=dict(self._levels),
            modes=dict(self._modes),
            sessions=dict(self._sessions),
            grants=tuple(self._grants.values()),
            catalogue=list(self._catalogue.tools) if self._catalogue is not None else None,
            withdrawn=dict(self._catalogue.withdrawn) if self._catalogue else {},
            unreviewed=dict(self._catalogue.unreviewed) if self._catalogue else {},
            usage=dict(self._usage),
        )

    def granted(self, request_id: str) -> bool:
        return request_id in self._grants

    def current(self) -> RecordedCatalogue:
        """:class:`ToolCatalogueRecord`: the catalogue recorded so far."""
        if self._catalogue is None:
            return RecordedCatalogue()
        was = self._catalogue
        return RecordedCatalogue(
            list(was.tools), dict(was.withdrawn), dict(was.accepted), dict(was.unreviewed)
        )

    async def hints(self) -> list[dict[str, Any]]:
        return sorted((dict(h) for h in self._hints.values()), key=lambda h: h["at"])

    async def versions(self) -> dict[str, int]:
        return dict(self._versions)

    def preceding(self, aggregate_id: str) -> int:
        return self._previous.get(aggregate_id, 0)


# ---------------------------------------------------------------------------- audit ---
class InMemoryAuditChain:
    """``fw_audit``, and the heads the firewall's stored events carry: :class:`AuditChain` and
    :class:`AuditHistory`."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[str, str, str]] = {}  # index -> (prev_hash, hash, record text)
        self._records: list[dict[str, Any]] = []  # the records appended, in order
        self._recorded: AuditHead | None = None
        self._published = 0

    def append(self, entry: AuditEntry, at: float) -> None:
        if entry.index in self._entries:
            raise ConcurrencyError(f"audit entry {entry.index} is already written")
        self._entries[entry.index] = (entry.prev_hash, entry.hash, entry.text)
        self._records.append(dict(entry.record))

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record appended, in order."""
        return list(self._records)

    def apply(self, event: Envelope) -> None:
        data = event.data
        if isinstance(data, AuditRecorded):  # a store from an older version
            self._entries.setdefault(data.index, (data.prev_hash, data.hash, record_text(data.record)))
            self._recorded = AuditHead(data.index, data.hash)
        elif isinstance(data, AuditHeadPublished) and event.aggregate_id == HEAD_AGGREGATE:
            self._published = max(self._published, data.index)
            self._recorded = AuditHead(data.index, data.hash)
        elif isinstance(data, VerdictIssued) and data.audit_head is not None:
            self._published = max(self._published, data.audit_head.index)
            self._recorded = AuditHead(data.audit_head.index, data.audit_head.hash)

    def head(self) -> AuditHead | None:
        if not self._entries:
            return None
        index = max(self._entries)
        return AuditHead(index, self._entries[index][1])

    def published_through(self) -> int:
        return self._published

    def hashes_between(self, after: int, through: int) -> list[str]:
        return [self._entries[index][1] for index in sorted(self._entries) if after < index <= through]

    async def page(self, after: int, limit: int) -> list[dict[str, Any]]:
        return [
            {"index": index, "prev_hash": prev, "hash": digest, "record": orjson.loads(text)}
            for index, prev, digest, text in (await self.entries())
            if index > after
        ][:limit]

    async def entries(
        self, after: int | None = None, limit: int | None = None
    ) -> list[tuple[int, str, str, str]]:
        return [
            (index, *self._entries[index])
            for index in sorted(self._entries)
            if after is None or index > after
        ][:limit]

    async def recorded_head(self) -> AuditHead | None:
        return self._recorded

    async def hashes(self, after: int, through: int) -> dict[int, str]:
        return {index: entry[1] for index, entry in self._entries.items() if after < index <= through}

    def rewrite(self, index: int, prev_hash: str, digest: str, text: str) -> None:
        """What someone with write access to the file does to one entry."""
        self._entries[index] = (prev_hash, digest, text)

    def delete(self, index: int) -> None:
        """What someone with write access to the file does to lose one entry."""
        del self._entries[index]


class InMemoryPublishedAudit:
    """:class:`PublishedAudit`: the heads and records published on the stream, in stream order."""

    def __init__(self) -> None:
        self.messages: list[tuple[type[EventData], PublishedEntry]] = []
        self.unreadable: Exception | None = None
        self._seq = itertools.count(1)

    def publish(self, event: Envelope) -> int:
        """Publish ``event`` on the stream; answers its stream sequence (every event takes one)."""
        seq = next(self._seq)
        data = event.data
        if isinstance(data, VerdictIssued) and data.audit_head is not None:
            data = data.audit_head  # a verdict carries a head: read back as one
        if isinstance(data, AuditHeadPublished):
            self.messages.append(
                (AuditHeadPublished, PublishedEntry(data.index, data.hash, seq, tuple(data.hashes)))
            )
        elif isinstance(data, AuditRecorded):
            self.messages.append((AuditRecorded, PublishedEntry(data.index, data.hash, seq)))
        return seq

    async def entries(
        self,
        kind: type[AuditHeadPublished] | type[AuditRecorded],
        *,
        after: int = 0,
        through: int | None = None,
    ) -> AsyncIterator[PublishedEntry]:
        if self.unreadable is not None:
            raise self.unreadable
        for published_kind, entry in self.messages:
            if published_kind is kind and entry.seq > after and (through is None or entry.seq <= through):
                yield entry


# --------------------------------------------------------------------- the store ---
class InMemoryFirewallStore:
    """The read models, and the firewall's own events with their aggregate versions."""

    def __init__(self) -> None:
        self.proposals = InMemoryProposals()
        self.approvals = InMemoryApprovals(self.proposals)
        self.policy = InMemoryPolicyState()
        self.audit = InMemoryAuditChain()
        self.local: list[Envelope] = []
        self._versions: dict[str, set[int]] = {}

    def apply(self, event: Envelope) -> None:
        """Fold ``event`` into every read model, in the service's projection order."""
        for model in (self.proposals, self.approvals, self.policy, self.audit):
            model.apply(event)

    def append(self, event: Envelope) -> None:
        """One of the firewall's own events: an aggregate version is taken once (the chain's guard)."""
        taken = self._versions.setdefault(event.aggregate_id, set())
        if event.aggregate_version in taken:
            raise ConcurrencyError(
                f"aggregate {event.aggregate_id!r} version {event.aggregate_version} already exists"
            )
        taken.add(event.aggregate_version)
        self.local.append(event)
        self.apply(event)

    def last_version(self, aggregate_id: str) -> int:
        return max(self._versions.get(aggregate_id, ()), default=0)


class InMemoryOutbox(FakeUnitOfWork):
    """One unit of work on an :class:`InMemoryFirewallStore`: the handler table hands it to
    :meth:`InMemoryFirewall.unit_for`, which binds the unit's ``emit`` and ``after_commit`` to it."""

    def __init__(
        self, store: InMemoryFirewallStore, clock: Callable[[], float], incoming: Envelope | None
    ) -> None:
        super().__init__(incoming, service=ACTOR)
        self.store = store
        self.clock = clock

    def emit(
        self,
        data: EventData,
        *,
        aggregate_id: str,
        actor: str,
        aggregate_version: int | None = None,
        correlation_id: str | None = None,
        causation_id: str | None = None,
        awaited: bool = False,  # the firewall marks none of its events awaited
    ) -> Envelope:
        if not owns(ACTOR, data.TYPE):
            raise AssertionError(f"the firewall does not own {data.TYPE}")
        incoming = self.incoming
        if incoming is not None:  # as the runtime's: the incoming event's, unless given
            correlation_id = incoming.correlation_id if correlation_id is None else correlation_id
            causation_id = incoming.event_id if causation_id is None else causation_id
        if aggregate_version is None:
            aggregate_version = self.store.last_version(aggregate_id) + 1
        event = new_event(
            data,
            aggregate_id=aggregate_id,
            aggregate_version=aggregate_version,
            actor=actor,
            correlation_id=correlation_id,
            causation_id=causation_id,
            occurred_at=self.clock(),
        )
        self.store.append(event)
        self.emitted.append(event)
        return event

    def commit(self) -> None:
        for fn in self.work:
            if fn() is not None:
                raise AssertionError(
                    "the firewall's after-commit work is synchronous (its FirewallUnit's hook)"
                )


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class InMemoryFirewall:
    """:class:`FirewallHandlers` for real, on the in-memory ports, played the way the runtime plays them."""

    def __init__(
        self,
        engine: FirewallEngine,
        *,
        clock: Clock | None = None,
        sandbox_root: str = "/srv/overseer/sandbox",
        files: dict[str, str] | None = None,
        response_grace_seconds: float = 10.0,
    ) -> None:
        self.clock = clock or Clock()
        self.store = InMemoryFirewallStore()
        self.state = KernelState(engine)
        self.anchor = AuditAnchor()
        self.firewall = FirewallHandlers(self.state, self.anchor)
        self.files = dict(files or {})
        self.env = Surroundings(
            sandbox_root=sandbox_root,
            current_file=self._current_file,
            clock=self.clock,
            response_grace_seconds=response_grace_seconds,
        )
        self.table = handlers(self.firewall, self.unit_for)
        self.published = InMemoryPublishedAudit()
        self._ids = itertools.count(1)

    @property
    def engine(self) -> FirewallEngine:
        return self.state.engine

    def _current_file(self, path: str) -> CurrentFile:
        text = self.files.get(path)
        return ABSENT if text is None else CurrentFile(True, text)

    def unit_for(self, uow: UnitOfWork) -> FirewallUnit:
        store = self.store
        return FirewallUnit(
            emit=uow.emit_as(ACTOR),
            after_commit=uow.after_commit,
            proposals=store.proposals,
            approvals=store.approvals,
            grants=store.policy,
            audit=store.audit,
            env=self.env,
            tools=store.policy,
            versions=store.policy,
        )

    def deliver(
        self,
        data: EventData,
        *,
        owner: str,
        aggregate_id: str | None = None,
        version: int = 1,
        occurred_at: float | None = None,
    ) -> list[Envelope]:
        """An event published by ``owner`` arrives: read models first, then its handler; answers what it emitted."""
        execution_id = getattr(data, "execution_id", None)
        event = new_event(
            data,
            aggregate_id=aggregate_id or (execution_id if isinstance(execution_id, str) else owner),
            aggregate_version=version,
            actor=owner,
            correlation_id=getattr(data, "session_id", None),
            occurred_at=self.clock() if occurred_at is None else occurred_at,
        )
        self.store.apply(event)
        outbox = InMemoryOutbox(self.store, self.clock, event)
        self.table.handle(outbox, event)
        return self._committed(outbox)

    # -- what the other services publish ---------------------------------------------------------------
    def propose(
        self,
        tool: str | None,
        args: dict[str, Any] | None = None,
        *,
        execution_id: str | None = None,
        session_id: str = "session-1",
        proposer: Principal = AGENT,
        owner: str = "gateway",
        **fields: Any,
    ) -> str:
        """``execution.proposed``; answers its execution_id."""
        execution_id = execution_id or f"exec-{next(self._ids)}"
        data = ExecutionProposed(
            execution_id=execution_id,
            session_id=session_id,
            tool=tool,
            args=args or {},
            proposer=proposer,
            **fields,
        )
        self.deliver(data, owner=owner)
        return execution_id

    def respond(
        self,
        execution_id: str,
        response: str,
        args_hash: str | None,
        *,
        responder: Principal = OPERATOR,
        session_id: str = "session-1",
        occurred_at: float | None = None,
    ) -> list[Envelope]:
        """``human.responded``: a person's answer."""
        data = HumanResponded(
            execution_id=execution_id,
            response=response,
            args_hash=args_hash,
            responder=responder,
            session_id=session_id,
        )
        return self.deliver(
            data, owner="gateway", aggregate_id=f"response:{next(self._ids)}", occurred_at=occurred_at
        )

    def answer(
        self,
        request_id: str,
        answer: str,
        grant: PathGrantAsked | None = None,
        *,
        responder: Principal = OPERATOR,
        session_id: str = "session-1",
    ) -> list[Envelope]:
        """``conversation.answer_received``: a person's answer to the agent's question (with its grant)."""
        data = AnswerReceived(
            session_id=session_id, request_id=request_id, answer=answer, responder=responder, grant=grant
        )
        return self.deliver(data, owner="gateway", aggregate_id=f"answer:{next(self._ids)}")

    def verdict(self, execution_id: str) -> dict[str, Any]:
        """The one ``firewall.verdict_issued`` of ``execution_id``."""
        [issued] = self.emitted("firewall.verdict_issued", execution_id=execution_id)
        return issued

    def run(self, fn: Callable[[FirewallUnit], T]) -> T:
        """``fn`` in a unit of work of its own, committed (a command, a timer round)."""
        outbox = InMemoryOutbox(self.store, self.clock, None)
        result = fn(self.unit_for(outbox))
        self._committed(outbox)
        return result

    async def in_unit(self, fn: Callable[[FirewallUnit], T]) -> T:
        """:class:`UnitRunner` on :meth:`run`."""
        return self.run(fn)

    def _committed(self, outbox: InMemoryOutbox) -> list[Envelope]:
        for event in outbox.emitted:
            if event.type not in KEPT_IN_STORE:  # the relay publishes what was committed, but those
                self.published.publish(event)
        outbox.commit()
        return outbox.emitted

    def audit_records(self) -> list[dict[str, Any]]:
        """Every audit record the firewall appended to its chain, in order."""
        return self.store.audit.records

    def emitted(self, event_type: str, **match: Any) -> list[dict[str, Any]]:
        """The ``data`` of every event of ``event_type`` the firewall emitted whose fields equal ``match``."""
        found = []
        for event in self.store.local:
            if event.type != event_type:
                continue
            data = event.data.model_dump(mode="json")
            if all(data.get(k) == v for k, v in match.items()):
                found.append(data)
        return found
