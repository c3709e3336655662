"""The firewall service: builds its adapters, its kernel and its handlers (the only place that does)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import tomllib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

from overseer_events.catalogue import Principal
from overseer_events.envelope import Envelope
from overseer_firewall.adapters.audit_chain import AuditProjection, ReaderAuditHistory, SqliteAuditChain
from overseer_firewall.adapters.audit_stream import StreamPublishedAudit
from overseer_firewall.adapters.filesystem import RealPathResolver, read_current_file
from overseer_firewall.adapters.pending_approvals import (
    ApprovalsProjection,
    ReaderEscalations,
    SqliteApprovals,
)
from overseer_firewall.adapters.policy_state import (
    PolicyProjection,
    ReaderPolicyState,
    SqlitePathGrants,
    SqlitePolicyVersions,
    SqliteToolCatalogue,
    policy_rows,
)
from overseer_firewall.adapters.proposals import ProposalsProjection, ReaderProposalHistory, SqliteProposals
from overseer_firewall.adapters.published_policy import admin_policy_published
from overseer_firewall.adapters.recent_events import recent_events
from overseer_firewall.application.anchoring import AuditAnchor, AuditVerifier
from overseer_firewall.application.commands import FirewallCommands
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.application.ports import FirewallUnit, Roots, Surroundings
from overseer_firewall.application.queries import FirewallQueries
from overseer_firewall.application.state import PERCEPTION, KernelState
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.policy import AdminPolicy, PolicyStore, parse_admin_policy
from overseer_firewall.domain.prompt import PromptPolicy
from overseer_firewall.entrypoints import events
from overseer_firewall.entrypoints.events import SUBSCRIPTIONS
from overseer_firewall.entrypoints.rpc import rpc
from overseer_firewall.settings import FirewallSettings, ToolSandbox
from overseer_runtime.partitions import Partition
from overseer_runtime.provisioning import Subscription
from overseer_runtime.rpc import RpcTable
from overseer_runtime.service import HandlerTable, Host, Service
from overseer_runtime.store import EventStore, Projection
from overseer_runtime.unit_of_work import UnitOfWork

log = logging.getLogger("overseer.firewall")

T = TypeVar("T")
ACTOR = "firewall"
DEFAULT_POLICY_FILE = Path(__file__).with_name("default_policy.toml")
POLICY_FILE_PRINCIPAL = {"kind": "system", "id": "policy-file"}
POLICY_WAIT_SECONDS = 0.5


def load_policy_file(path: Path) -> AdminPolicy:
    """The admin policy in a TOML file; a file that does not validate stops the firewall (fail closed)."""
    return parse_admin_policy(tomllib.loads(path.read_text(encoding="utf-8")))


class FirewallService(Service):
    """The kernel: FirewallEngine, HumanGate, PerceptionBus, AuditLog — every safety judgement."""

    name = "firewall"
    # Its handlers fold what makes it stricter into the kernel as they go (each proposal seen, counted
    # against its session's budget; a session paused): a batch rolled back makes the kernel again from
    # the store (``rolled_back``), so a batch applied again counts nothing twice.
    reapplies_batches = True

    def __init__(self, *, clock: Callable[[], float] | None = None, policy_file: Path | None = None) -> None:
        self.clock = clock or time.time
        self.policy_file = policy_file
        self.state = KernelState(FirewallEngine())
        self.anchor = AuditAnchor()
        self.firewall = FirewallHandlers(self.state, self.anchor)
        self.prompt = PromptPolicy()
        self.partition = Partition()
        # Set by start(): no event is handled and no RPC answered before it returned.
        self.store: EventStore
        self.roots: Roots
        self.resolver: RealPathResolver
        self.warm_events: int
        self.env: Surroundings
        self.queries: FirewallQueries
        self.commands: FirewallCommands
        self.replay_limit: int

    # -- what the runtime asks ----------------------------------------------------------------
    def projections(self) -> Sequence[Projection]:
        # Order matters: approvals read fw_proposals when a verdict opens a request.
        return [ProposalsProjection(), ApprovalsProjection(), PolicyProjection(), AuditProjection()]

    def subscriptions(self) -> Sequence[Subscription]:
        return SUBSCRIPTIONS

    def handlers(self) -> HandlerTable[FirewallUnit]:
        return events.handlers(self.firewall, self.unit_for)

    def partition_key(self, event: Envelope) -> str | None:
        return events.partition_key(event)

    def ignores(self, event: Envelope) -> bool:
        if events.announced_open(event):
            return True
        return not self.firewall.keeper and events.kept_by_partition_zero(event)

    def rpc(self) -> RpcTable:
        return rpc(self)

    def unit_for(self, uow: UnitOfWork) -> FirewallUnit:
        """The firewall's ports in ``uow``'s transaction."""
        return FirewallUnit(
            emit=uow.emit_as(ACTOR),
            after_commit=uow.after_commit,
            proposals=SqliteProposals(uow.conn),
            approvals=SqliteApprovals(uow.conn),
            grants=SqlitePathGrants(uow.conn),
            audit=SqliteAuditChain(uow.conn),
            env=self.env,
            tools=SqliteToolCatalogue(uow.conn),
            versions=SqlitePolicyVersions(uow.conn),
        )

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self, runtime: Host) -> None:
        settings = runtime.settings.typed("firewall", FirewallSettings)
        self.partition = partition = runtime.partition
        self.firewall.keeper = partition.index == 0
        home = runtime.settings.home
        sandbox = home / runtime.settings.typed("tools", ToolSandbox).sandbox
        sandbox.mkdir(parents=True, exist_ok=True)
        self.roots = roots = Roots(sandbox=str(sandbox), cwd=settings.cwd or os.getcwd(), home=str(home))
        self.resolver = RealPathResolver([roots.sandbox, roots.cwd, roots.home])
        self.store = runtime.store
        self.warm_events = settings.warm_events
        self.env = Surroundings(
            sandbox_root=roots.sandbox,
            current_file=read_current_file,
            clock=self.clock,
            response_grace_seconds=settings.response_grace_seconds,
        )

        def in_unit(fn: Callable[[FirewallUnit], T]) -> Awaitable[T]:
            return runtime.execute_in(self.unit_for, fn)

        reader = runtime.reader
        policy = ReaderPolicyState(reader)
        audit = ReaderAuditHistory(reader)
        self.queries = FirewallQueries(
            self.state,
            self.prompt,
            roots,
            policy=policy,
            proposals=ReaderProposalHistory(reader),
            audit=audit,
            verifier=AuditVerifier(
                audit, StreamPublishedAudit(runtime.nc, runtime.subjects, chain=partition.index)
            ),
            escalations=ReaderEscalations(reader),
        )
        self.commands = FirewallCommands(self.firewall, in_unit, self.clock)
        self.replay_limit = settings.replay_limit
        self.anchor.bind(in_unit, runtime.spawn, settings.audit_head_linger_seconds, chain=partition.index)

        self._load_kernel()
        if self.firewall.keeper:
            await self._seed_admin_policy(settings)
        elif self.state.engine.policy.admin.version == 0:
            await self._await_admin_policy(runtime)
        # Records committed before a crash, whose head was not yet published: anchor them now.
        await self.anchor.flush()
        warmed = self._warm()
        log.info(
            "firewall: policy version %s, %s recent events replayed", self.state.engine.policy.version, warmed
        )
        runtime.spawn(self._timer(settings.timer_interval_seconds))

    def rolled_back(self) -> None:
        """The kernel made again from the store, as at start: the policy state from its read models, loop
        windows and perception counters from the recent events (so a batch applied again after a
        rollback counts nothing twice; what it forgets of older events, a restart forgets too)."""
        self._load_kernel()
        warmed = self._warm()
        log.info("firewall: a batch was rolled back; the kernel was made again from %s recent events", warmed)

    def _load_kernel(self) -> None:
        """A new engine with the policy state the store's read models hold (read on the writer's
        connection, all of it as the last commit left it)."""
        roots = self.roots
        engine = FirewallEngine(
            PolicyStore(), sandbox_root=roots.sandbox, cwd=roots.cwd, home=roots.home, resolver=self.resolver
        )
        engine.modes.share_out(self.partition.index, self.partition.count)
        self.state.engine = engine
        self.state.load(policy_rows(self.store.conn))

    def _warm(self) -> int:
        """Loop windows and perception counters refilled from the store's most recent events."""
        return self.state.warm(
            recent_events(self.store, PERCEPTION, self.warm_events), SqliteProposals(self.store.conn).get
        )

    async def sessions_in_flight(self, host: Host) -> set[str]:
        return await host.execute_in(
            self.unit_for, lambda unit: {p.session_id for p in unit.approvals.pending()}
        )

    async def stop(self) -> None:
        # Anchor what was appended since the last head; the runtime drains the relay after this.
        await self.anchor.flush()
        self.anchor.unbind()

    async def _seed_admin_policy(self, settings: FirewallSettings) -> None:
        path = self.policy_file or Path(settings.policy_file or DEFAULT_POLICY_FILE)
        from_file = load_policy_file(path)
        current = self.state.engine.policy.admin
        if current.version == 0:
            by = Principal.model_validate(POLICY_FILE_PRINCIPAL)
            await self.commands.replace_admin(from_file, by)
            log.info("firewall: admin policy seeded from %s", path)
        elif from_file.as_dict() != current.as_dict():
            log.warning(
                "firewall: %s differs from the stored admin policy (version %s); the admin layer changes only "
                "through the admin API (PUT /v1/policy/admin)",
                path,
                current.version,
            )

    async def _await_admin_policy(self, runtime: Host) -> None:
        """A replica that holds no admin policy yet (a new one) starts reading proposals only once partition 0
        has published one: its proposals wait on the stream rather than being tried and put back until
        the policy reaches it (it reads that on a consumer of its own, started with the others)."""
        while not await admin_policy_published(runtime.nc, runtime.subjects):
            log.info("firewall: waiting for partition 0 to publish the admin policy")
            await asyncio.sleep(POLICY_WAIT_SECONDS)

    async def _timer(self, interval: float) -> None:
        """The decider of last resort: escalate and time out unanswered requests."""
        while True:
            await asyncio.sleep(interval)
            try:
                await self.commands.check_timeouts()
            except Exception:  # a failed round is retried on the next tick
                log.exception("firewall: approval timeout check failed")
