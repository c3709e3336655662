"""The firewall's read ports built two ways, for the contract suites: in memory, and in SQLite on a real file.

Both are fed the same way, event by event, as the runtime feeds them: an event another service
published is recorded and projected; one of the firewall's own is appended (each aggregate version
once) and projected. The SQLite side uses the service's own projections, in the service's order,
on a real :class:`EventStore`; its query ports read through the runtime's read-only reader.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from overseer_events.catalogue import (
    AuditRecorded,
    ExecutionProposed,
    ExecutionTransitioned,
    LayerFinding,
    Principal,
    VerdictIssued,
)
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_events.subjects import owners_of, owns, subject_for
from overseer_firewall.adapters.audit_chain import ReaderAuditHistory, SqliteAuditChain
from overseer_firewall.adapters.pending_approvals import ReaderEscalations, SqliteApprovals
from overseer_firewall.adapters.policy_state import ReaderPolicyState, SqlitePathGrants, SqliteToolCatalogue
from overseer_firewall.adapters.proposals import ReaderProposalHistory, SqliteProposals
from overseer_firewall.application.ports import (
    Approvals,
    AuditChain,
    AuditHistory,
    Escalations,
    PathGrants,
    PolicyState,
    ProposalHistory,
    Proposals,
    ToolCatalogueRecord,
)
from overseer_firewall.bootstrap import FirewallService
from overseer_firewall.domain.audit import EMPTY_HEAD, AuditEntry, AuditHead, append_entry
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from tests.fakes.firewall import InMemoryFirewallStore

BACKENDS = ("fake", "sqlite")
AGENT = Principal(kind="agent", id="helper")
ALICE = Principal(kind="operator", id="alice")
ROOT = Principal(kind="admin", id="root")


class FirewallBackend:
    """The firewall's read ports over one store, and a clock that moves a second per event."""

    proposals: Proposals
    approvals: Approvals
    grants: PathGrants
    audit: AuditChain
    tools: ToolCatalogueRecord

    def __init__(self) -> None:
        self._now = itertools.count(1_700_000_000)

    def apply(self, data: EventData, *, aggregate_id: str | None = None, version: int = 1) -> Envelope:
        """``data`` arrives (another service's event) or is emitted (the firewall's own), as one transaction."""
        execution_id = getattr(data, "execution_id", None)
        event = new_event(
            data,
            aggregate_id=aggregate_id or (execution_id if isinstance(execution_id, str) else data.TYPE),
            aggregate_version=version,
            actor="firewall" if owns("firewall", data.TYPE) else owners_of(data.TYPE)[0],
            occurred_at=float(next(self._now)),
        )
        self.record(event)
        return event

    def append(self, *entries: AuditEntry) -> None:
        """``entries`` appended to the audit chain, as a handler does, in one transaction."""
        raise NotImplementedError

    def record(self, event: Envelope) -> None:
        raise NotImplementedError

    async def proposal_history(self) -> ProposalHistory:
        raise NotImplementedError

    async def policy_state(self) -> PolicyState:
        raise NotImplementedError

    async def audit_history(self) -> AuditHistory:
        raise NotImplementedError

    async def escalations(self) -> Escalations:
        raise NotImplementedError

    async def close(self) -> None:
        pass


class FakeFirewall(FirewallBackend):
    def __init__(self) -> None:
        super().__init__()
        self.store = InMemoryFirewallStore()
        self.proposals = self.store.proposals
        self.approvals = self.store.approvals
        self.grants = self.store.policy
        self.audit = self.store.audit
        self.tools = self.store.policy

    def append(self, *entries: AuditEntry) -> None:
        for entry in entries:
            self.audit.append(entry, float(next(self._now)))

    def record(self, event: Envelope) -> None:
        if event.actor == "firewall":
            self.store.append(event)
        else:
            self.store.apply(event)

    async def proposal_history(self) -> ProposalHistory:
        return self.store.proposals

    async def policy_state(self) -> PolicyState:
        return self.store.policy

    async def audit_history(self) -> AuditHistory:
        return self.store.audit

    async def escalations(self) -> Escalations:
        return self.store.approvals


class SqliteFirewall(FirewallBackend):
    """The SQLite adapters on ``path``: an event store with the firewall's projections."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.store = EventStore(path)
        self.projections = list(FirewallService().projections())
        self.store.create_projections(self.projections)
        conn = self.store.conn
        self.proposals = SqliteProposals(conn)
        self.approvals = SqliteApprovals(conn)
        self.grants = SqlitePathGrants(conn)
        self.audit = SqliteAuditChain(conn)  # for reads: it never appends, so it reads every head
        self.tools = SqliteToolCatalogue(conn)
        self._reader: ReadModelReader | None = None

    def append(self, *entries: AuditEntry) -> None:
        with self.store.transaction() as conn:
            chain = SqliteAuditChain(conn)  # a unit's own, as the service makes one per unit of work
            for entry in entries:
                chain.append(entry, float(next(self._now)))

    def record(self, event: Envelope) -> None:
        subject = subject_for(event.actor, event.type)
        with self.store.transaction() as conn:
            if event.actor == "firewall":
                self.store.append([event], subjects=[subject])
            else:
                self.store.record_received(event, event.encode(), subject, None)
            for projection in self.projections:
                projection.apply(conn, event)

    async def reader(self) -> ReadModelReader:
        if self._reader is None:
            self._reader = await ReadModelReader(self.path).open()
        return self._reader

    async def proposal_history(self) -> ProposalHistory:
        return ReaderProposalHistory(await self.reader())

    async def policy_state(self) -> PolicyState:
        return ReaderPolicyState(await self.reader())

    async def audit_history(self) -> AuditHistory:
        return ReaderAuditHistory(await self.reader())

    async def escalations(self) -> Escalations:
        return ReaderEscalations(await self.reader())

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
        self.store.close()


def make_backend(kind: str, tmp_path: Path) -> FirewallBackend:
    return FakeFirewall() if kind == "fake" else SqliteFirewall(tmp_path / "firewall.db")


# -- events as the services publish them ----------------------------------------------------------------
def proposed(
    execution_id: str,
    tool: str | None = "email.send",
    *,
    session_id: str = "s-1",
    args: dict[str, Any] | None = None,
    **fields: Any,
) -> ExecutionProposed:
    return ExecutionProposed(
        execution_id=execution_id,
        session_id=session_id,
        tool=tool,
        args={"to": "bob@example.com"} if args is None else args,
        proposer=AGENT,
        **fields,
    )


def verdict(
    execution_id: str, decision: str = "hold", *, level: str = "APPROVE", **fields: Any
) -> VerdictIssued:
    values: dict[str, Any] = {
        "session_id": "s-1",
        "tool": "email.send",
        "args_hash": f"hash-{execution_id}",
        "findings": [LayerFinding(layer="L3.permission", outcome="escalate", message="needs a person")],
        "policy_version": 1,
        "requested_by": AGENT,
    }
    return VerdictIssued(execution_id=execution_id, level=level, decision=decision, **(values | fields))


def suspended(execution_id: str, at: float = 1.0, *, session_id: str = "s-1") -> ExecutionTransitioned:
    """A running action suspended (RUNNING → WAITING): the executor asks a person what happened."""
    return ExecutionTransitioned(
        execution_id=execution_id,
        session_id=session_id,
        from_status="running",
        to_status="waiting",
        trigger="suspend",
        actor="tool_node",
        timestamp=at,
    )


def ended(execution_id: str, to_status: str = "completed") -> ExecutionTransitioned:
    return ExecutionTransitioned(
        execution_id=execution_id,
        session_id="s-1",
        from_status="running",
        to_status=to_status,
        trigger="succeed",
        actor="tool_node",
        timestamp=0.0,
    )


def chain(*records: dict[str, Any], after: AuditHead | AuditEntry = EMPTY_HEAD) -> list[AuditEntry]:
    """The entries that append ``records`` after ``after``, each linked to the one before."""
    entries = []
    for record in records:
        after = append_entry(after, record)
        entries.append(after)
    return entries


def recorded(entry: AuditEntry) -> AuditRecorded:
    """The event a store from an older version holds for ``entry`` (records were events then)."""
    return AuditRecorded(
        index=entry.index, prev_hash=entry.prev_hash, hash=entry.hash, record=dict(entry.record)
    )
