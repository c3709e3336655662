"""What the executor's application layer needs from the outside.

The SQLite read models (``adapters/contracts_sql.py``) implement :class:`ContractRepository` and
:class:`ExecutorQueries`; the tool registry (``adapters/tools/registry.py``) is the
:class:`ToolCatalog`; a contract's events go out through the runtime's event sink,
:class:`overseer_runtime.unit_of_work.Emit` (the aggregate is the contract, its version the
contract's). Unit tests use the in-memory implementations of ``tests/fakes/executor.py``, which
pass the same contract suites.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Protocol

from overseer_events.catalogue import ExecutionTransitioned
from overseer_events.machines import ExecutionStatus
from overseer_events.views import ExecutionConsequenceView
from overseer_executor.domain.claims import Twin
from overseer_executor.domain.contract import ExecutionContract
from overseer_executor.domain.tools import ToolCall, ToolSpec

JSON = dict[str, Any]


class ContractRepository(abc.ABC):
    """The contracts as the handlers load them, each with its verdict and the form it waits on.

    Read inside the handler's own transaction, on the writer's connection (the transition hot
    path: point reads and keyed scans only), so what the same batch changed earlier is seen.
    """

    @abc.abstractmethod
    def get(self, execution_id: str) -> ExecutionContract | None: ...

    @abc.abstractmethod
    def status_of(self, execution_id: str | None) -> ExecutionStatus | None:
        """The contract's status alone (None for no id or an unknown one)."""

    @abc.abstractmethod
    def has_verdict(self, execution_id: str) -> bool:
        """Whether the firewall's verdict is known, also when it came before the proposal."""

    @abc.abstractmethod
    def was_asked(self, execution_id: str) -> bool:
        """Whether a person was ever asked about the contract: every wait for a person is a form's, and a
        contract's forms are kept (what its consequence view calls ``was_suspended``)."""

    @abc.abstractmethod
    def twin_of(self, contract: ExecutionContract | None) -> Twin | None:
        """Another contract with the same idempotency key that COMPLETED, else the one holding the key's
        claim (RUNNING first, then WAITING on a reconciliation, then on a form); only for an
        irreversible contract with a key."""

    @abc.abstractmethod
    def waiting_with_completed_twin(self) -> list[ExecutionContract]:
        """Irreversible contracts WAITING on an approval while a twin with their key COMPLETED."""

    @abc.abstractmethod
    def pending_dependents(self, execution_id: str) -> list[ExecutionContract]:
        """PENDING contracts whose ``depends_on`` is ``execution_id``, oldest first."""

    @abc.abstractmethod
    def with_status(self, status: ExecutionStatus) -> list[ExecutionContract]: ...

    @abc.abstractmethod
    def open_in_session(self, session_id: str) -> list[ExecutionContract]:
        """The session's PENDING and WAITING contracts, oldest first."""

    @abc.abstractmethod
    def sessions_with_open_calls(self) -> set[str]:
        """The sessions with a contract not yet ended (PENDING, RUNNING or WAITING)."""

    @abc.abstractmethod
    def waiting_since_before(self, cutoff: float) -> list[ExecutionContract]:
        """Contracts WAITING on an approval or a confirmation requested at or before ``cutoff``."""

    @abc.abstractmethod
    def running_at_agent_since_before(self, cutoff: float) -> list[ExecutionContract]:
        """Contracts that run at the agent, RUNNING since ``cutoff`` or before (no report has come)."""


class ToolSpecs(Protocol):
    """Tool declarations by name: dictionary reads, asked inside handlers."""

    def spec(self, name: str | None) -> ToolSpec | None: ...


class ToolCatalog(ToolSpecs, Protocol):
    """The tools the runner calls: their declarations, and a call (arguments checked first)."""

    async def execute(self, call: ToolCall) -> str: ...


@dataclass(frozen=True, slots=True)
class ApprovalForm:
    """An ``ecs.requested`` form: pending until its contract leaves WAITING, then answered with ``outcome``."""

    execution_id: str
    kind: str
    session_id: str
    tool: str | None
    args: JSON
    args_hash: str
    level: str | None
    preview: JSON | None
    requested_at: float
    requested_by: str
    message: str | None
    status: str
    answered_at: float | None
    outcome: str | None

    def as_dict(self) -> JSON:
        """An approval as GET /v1/approvals lists it (plus message, status and outcome)."""
        return {
            "execution_id": self.execution_id,
            "kind": self.kind,
            "session_id": self.session_id,
            "tool": self.tool,
            "args": self.args,
            "args_hash": self.args_hash,
            "level": self.level,
            "preview": self.preview,
            "requested_at": self.requested_at,
            "requested_by": self.requested_by,
            "message": self.message,
            "status": self.status,
            "answered_at": self.answered_at,
            "outcome": self.outcome,
        }


@dataclass(frozen=True, slots=True)
class AskedApproval:
    """A form with its contract's state, as ``approvals.get`` answers it (read in one query).

    The contract's fields are None when the contract is unknown."""

    form: ApprovalForm
    contract_status: str | None
    proposer: str | None  # ``<kind>:<id>``
    contract_error: str | None  # why an answered card's contract ended without success

    def as_dict(self) -> JSON:
        return {
            **self.form.as_dict(),
            "contract_status": self.contract_status,
            "proposer": self.proposer,
            "contract_error": self.contract_error,
        }


@dataclass(frozen=True, slots=True)
class RefusedDecision:
    """A human decision the resume alignment check refused (``alignment.py``), with the reason."""

    event_id: str
    execution_id: str
    decision: str
    decided_by: str
    args_hash: str
    reason: str
    refused_at: float

    def as_dict(self) -> JSON:
        return {
            "event_id": self.event_id,
            "execution_id": self.execution_id,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "args_hash": self.args_hash,
            "reason": self.reason,
            "refused_at": self.refused_at,
        }


@dataclass(frozen=True, slots=True)
class Transition:
    """One ``execution.transitioned`` of a contract, as ``contract.get`` lists it."""

    from_status: str
    to_status: str
    trigger: str
    actor: str
    timestamp: float
    reason: str | None

    @classmethod
    def of(cls, moved: ExecutionTransitioned) -> Transition:
        return cls(
            moved.from_status, moved.to_status, moved.trigger, moved.actor, moved.timestamp, moved.reason
        )

    def as_dict(self) -> JSON:
        return {
            "from": self.from_status,
            "to": self.to_status,
            "trigger": self.trigger,
            "actor": self.actor,
            "timestamp": self.timestamp,
            "reason": self.reason,
        }


class ExecutorQueries(abc.ABC):
    """What the RPC methods read: committed state, between transactions.

    The lists (which may scan) go through the runtime's read-only reader off the event loop; the
    point reads (``approval`` is on the approval pipeline's path) use the writer's connection.
    """

    @abc.abstractmethod
    async def approvals(self, *, status: str, session_id: str | None) -> list[ApprovalForm]:
        """Forms with ``status`` (``pending`` | ``answered``), of one session or all, oldest first."""

    @abc.abstractmethod
    async def refused_decisions(self, execution_id: str | None) -> list[RefusedDecision]:
        """Refused decisions, of one execution or all, oldest first."""

    @abc.abstractmethod
    def approval(self, execution_id: str) -> AskedApproval | None:
        """The form asked for ``execution_id`` (pending or answered) with its contract's state."""

    @abc.abstractmethod
    def contract(self, execution_id: str) -> ExecutionContract | None: ...

    @abc.abstractmethod
    def status(self, execution_id: str) -> ExecutionStatus | None:
        """The contract's status alone (None for an unknown one): what a waiting caller reads each time."""

    @abc.abstractmethod
    def consequence(self, execution_id: str) -> ExecutionConsequenceView | None:
        """The contract's consequence view (``domain.contract.consequence``), None for an unknown one."""

    @abc.abstractmethod
    def transitions(self, execution_id: str) -> list[Transition]:
        """The contract's own ``execution.transitioned`` events, in order."""
