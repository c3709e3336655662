"""What the firewall's application layer needs from outside: read models and the stream.

Two kinds of read port, by the connection they read on:

* **in a unit of work** (:class:`Proposals`, :class:`Approvals`, :class:`PathGrants`, :class:`AuditChain`): point reads on
  the writer's connection, inside the transaction that handles an event, so they see what that
  transaction has written so far (the verdict's hot path reads them on every proposal);
* **for queries** (:class:`PolicyState`, :class:`ProposalHistory`, :class:`AuditHistory`): reads
  that may scan, answered by the runtime's read-only reader off the event loop, so a long one never
  stalls the consumer; they see what is committed.

The firewall's own events go out through the runtime's event sink
(:class:`overseer_runtime.unit_of_work.Emit`), in the unit's transaction: the read models reflect each
one at once (the next read in the same unit sees it), and the relay publishes it after the commit.

``bootstrap.unit_for`` builds a :class:`FirewallUnit` per transaction from the SQLite adapters; unit tests
build one from the in-memory fakes of ``tests/fakes/firewall.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from overseer_events.catalogue import AnnouncedTool, AuditHeadPublished, AuditRecorded
from overseer_firewall.domain.audit import AuditEntry, AuditHead
from overseer_firewall.domain.budgets import Usage
from overseer_firewall.domain.gate import PendingApproval, SessionState
from overseer_firewall.domain.grants import PathGrant, SessionGrants
from overseer_firewall.domain.model import Proposal
from overseer_firewall.domain.modes import ModeSetting
from overseer_firewall.domain.policy import UserLevel
from overseer_firewall.domain.preview import CurrentFile
from overseer_firewall.domain.replay import RecordedProposal
from overseer_runtime.unit_of_work import Emit

T = TypeVar("T")
CurrentFileReader = Callable[[str], CurrentFile]


# -- what the read models hand back ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoredProposal:
    """A proposal as recorded, with the verdict it got (``None`` fields before the verdict)."""

    proposal: Proposal
    level: str | None
    decision: str | None
    args_hash: str | None


@dataclass(frozen=True, slots=True)
class PolicyRows:
    """The policy state as the read model holds it."""

    admin_version: int | None
    admin_policy: dict[str, Any] | None
    user_version: int
    user_levels: dict[str, UserLevel]
    modes: dict[str, ModeSetting]
    sessions: dict[str, SessionState]
    grants: tuple[PathGrant, ...] = ()  # session path grants, in the order they were recorded
    catalogue: list[AnnouncedTool] | None = None  # the tools the executor announced (None: not yet)
    withdrawn: dict[str, str] = field(default_factory=dict)  # tools no longer offered, and why
    unreviewed: dict[str, str] = field(default_factory=dict)  # MCP tools changed since accepted, and how
    usage: dict[str, Usage] = field(default_factory=dict)  # each session's calls judged and model tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "admin_version": self.admin_version,
            "admin_policy": self.admin_policy,
            "user_version": self.user_version,
            "user_levels": {
                tool: {
                    "level": e.level.name,
                    "previous": e.previous.name if e.previous else None,
                    "trigger": e.trigger,
                    "hint": e.hint,
                }
                for tool, e in sorted(self.user_levels.items())
            },
            "modes": {
                p: {"mode": s.mode.value, "grant": s.grant.as_dict() if s.grant else None}
                for p, s in sorted(self.modes.items())
            },
            "sessions": {
                s: {"paused": st.paused, "aborts": st.aborts} for s, st in sorted(self.sessions.items())
            },
            "grants": SessionGrants(self.grants).describe(),
        }


@dataclass(frozen=True, slots=True)
class PublishedEntry:
    """An audit entry (a head or a record) as the events stream holds it, with its stream sequence."""

    index: int
    hash: str
    seq: int
    covers: tuple[str, ...] = ()  # a head's: the hashes of the entries up to it since the previous head

    @property
    def head(self) -> AuditHead:
        return AuditHead(self.index, self.hash)

    def covered(self) -> list[AuditHead]:
        """The entries a head vouches for, each with its hash (none for a head without ``covers``)."""
        first = self.index - len(self.covers) + 1
        return [AuditHead(first + offset, digest) for offset, digest in enumerate(self.covers)]


# -- in a unit of work: the writer's connection, inside the transaction --------------------------------
class Proposals(Protocol):
    """``fw_proposals``: every proposal with its verdict. Point reads on the writer's connection."""

    def has_verdict(self, execution_id: str) -> bool: ...

    def get(self, execution_id: str) -> StoredProposal | None: ...


class Approvals(Protocol):
    """``fw_approvals``: the requests a person must answer. Point reads on the writer's connection
    (the one an answer is about), and the pending ones for the timer (an index range)."""

    def get(self, execution_id: str) -> PendingApproval | None: ...

    def pending(self) -> list[PendingApproval]:
        """Pending requests, oldest first."""
        ...


class PathGrants(Protocol):
    """``fw_path_grants``: the grants recorded, by the permission request they answered. A point read
    on the writer's connection (one grant per request, however often it is answered)."""

    def granted(self, request_id: str) -> bool: ...


class PolicyVersions(Protocol):
    """``fw_policy_versions`` on the writer's connection: how far each of partition 0's policy aggregates
    (:data:`POLICY_AGGREGATES`) was applied here."""

    def preceding(self, aggregate_id: str) -> int:
        """The version of ``aggregate_id`` applied before the latest one (0: none before it)."""
        ...


class AuditChain(Protocol):
    """``fw_audit``, on the writer's connection: every record appended reads the head before it."""

    def head(self) -> AuditHead | None: ...

    def append(self, entry: AuditEntry, at: float) -> None:
        """Write ``entry`` (recorded at ``at``) after the head; an index already written is refused
        (:class:`~overseer_events.errors.ConcurrencyError`)."""
        ...

    def published_through(self) -> int:
        """The highest index a head was emitted for, on its own (``audit.head_published``) or carried by
        a verdict (0: none yet)."""
        ...

    def hashes_between(self, after: int, through: int) -> list[str]:
        """The hash of each entry with ``after < index <= through``, in index order."""
        ...


# -- for queries: the runtime's read-only reader, committed data ---------------------------------------
# The aggregates of partition 0's policy events (the admin layer, user levels and modes; the catalogue):
# how far a store applied each tells whether a replica has caught up with partition 0.
POLICY_AGGREGATES = ("policy", "catalogue")


class PolicyState(Protocol):
    """The policy read models (admin policy, user levels, agent modes, sessions, grants, hints). Read by the
    read-only reader: each table on its own, so read it when nothing writes (at start) or accept that a
    change committing meanwhile shows in part (the ``policy.get`` diagnostic view)."""

    async def rows(self) -> PolicyRows: ...

    async def hints(self) -> list[dict[str, Any]]:
        """Every standing hint, oldest first: ``{tool, kind, message, at}``."""
        ...

    async def versions(self) -> dict[str, int]:
        """How far this store applied each policy aggregate (``policy``: the admin layer, user levels and
        modes; ``catalogue``), by aggregate version: what tells a replica has caught up with partition 0."""
        ...


class Escalations(Protocol):
    """``fw_approvals`` read by the read-only reader: the requests escalated to an admin."""

    async def escalated(self) -> list[str]:
        """The execution ids of the pending requests nobody answered in time, so an admin decides them,
        oldest first."""
        ...


class ProposalHistory(Protocol):
    """``fw_proposals`` scanned for policy replay, by the read-only reader."""

    async def recorded(self, limit: int) -> list[RecordedProposal]:
        """The last ``limit`` proposals that got a verdict, oldest first."""
        ...


class AuditHistory(Protocol):
    """``fw_audit`` and the heads the firewall's stored events carry, scanned by the read-only reader.

    The chain only grows: read the recorded head before the entries, and a record committed
    in between makes the entries longer than the head, never shorter.
    """

    async def page(self, after: int, limit: int) -> list[dict[str, Any]]:
        """``{index, prev_hash, hash, record}`` of the entries after index ``after``, at most ``limit``."""
        ...

    async def entries(
        self, after: int | None = None, limit: int | None = None
    ) -> list[tuple[int, str, str, str]]:
        """The entries after index ``after`` (None: from the first), at most ``limit`` (None: every one), as
        ``(index, prev_hash, hash, record_text)``, in index order."""
        ...

    async def recorded_head(self) -> AuditHead | None:
        """The last head the firewall's own events recorded in its append-only events table (a verdict's
        ``audit_head``, an ``audit.head_published``; from an older store, an ``audit.recorded``): the
        chain must reach it, with that hash."""
        ...

    async def hashes(self, after: int, through: int) -> dict[int, str]:
        """The hash of each entry with ``after < index <= through``."""
        ...


class PublishedAudit(Protocol):
    """The audit entries published on the events stream, which denies delete and purge."""

    def entries(
        self,
        kind: type[AuditHeadPublished] | type[AuditRecorded],
        *,
        after: int = 0,
        through: int | None = None,
    ) -> AsyncIterator[PublishedEntry]:
        """The published heads or records, with stream sequence in ``(after, through]``, in stream order."""
        ...


# -- the unit ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Roots:
    """The directories ``{sandbox}``, ``{cwd}`` and ``{home}`` in a policy's paths stand for."""

    sandbox: str
    cwd: str
    home: str


@dataclass(frozen=True, slots=True)
class Surroundings:
    """What the handlers need besides the kernel: the sandbox on disk, a clock, the configured grace."""

    sandbox_root: str
    current_file: CurrentFileReader
    clock: Callable[[], float]
    response_grace_seconds: float


@dataclass(frozen=True, slots=True)
class FirewallUnit:
    """The ports of one unit of work, bound to its transaction."""

    emit: Emit
    after_commit: Callable[[Callable[[], None]], None]  # runs the work once the unit committed, never if not
    proposals: Proposals
    approvals: Approvals
    grants: PathGrants
    audit: AuditChain
    env: Surroundings
    tools: ToolCatalogueRecord
    versions: PolicyVersions


@dataclass(frozen=True, slots=True)
class RecordedCatalogue:
    """The tool catalogue as recorded: the tools announced, those withdrawn (name → why), the fingerprint
    an admin accepted for each MCP tool, and the MCP tools changed since (name → what changed)."""

    tools: list[AnnouncedTool] = field(default_factory=list)
    withdrawn: dict[str, str] = field(default_factory=dict)
    accepted: dict[str, str] = field(default_factory=dict)
    unreviewed: dict[str, str] = field(default_factory=dict)

    def with_change_accepted(self, tool: str, fingerprint: str) -> RecordedCatalogue:
        """This record once an admin accepted ``tool`` as it is now (its ``fingerprint``)."""
        unreviewed = {name: why for name, why in self.unreviewed.items() if name != tool}
        return replace(self, accepted={**self.accepted, tool: fingerprint}, unreviewed=unreviewed)


class ToolCatalogueRecord(Protocol):
    """The tool catalogue as recorded so far in this transaction."""

    def current(self) -> RecordedCatalogue: ...


class UnitRunner(Protocol):
    """Runs ``fn`` in a new unit of work (one transaction) and answers its result once committed."""

    def __call__(self, fn: Callable[[FirewallUnit], T]) -> Awaitable[T]: ...


Spawn = Callable[[Coroutine[Any, Any, Any]], object]
