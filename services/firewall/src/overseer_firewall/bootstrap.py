"""The firewall service: builds its adapters, its kernel and its handlers (the only place that does)."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from overseer_events.catalogue import Principal
from overseer_events.envelope import Envelope
from overseer_firewall.adapters.filesystem import RealPathResolver, read_current_file
from overseer_firewall.adapters.read_models import (
    ApprovalsProjection,
    AuditProjection,
    PolicyProjection,
    PolicyQueries,
    ProposalQueries,
    ProposalsProjection,
)
from overseer_firewall.application.anchoring import DEFAULT_LINGER
from overseer_firewall.application.handlers import FirewallHandlers, Surroundings
from overseer_firewall.application.state import PERCEPTION, KernelState
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.policy import AdminPolicy, PolicyStore, parse_admin_policy
from overseer_firewall.domain.prompt import PromptPolicy
from overseer_firewall.entrypoints.events import SUBSCRIPTIONS, handler_table
from overseer_firewall.entrypoints.rpc import FirewallRpc
from overseer_runtime.runtime import Handler, RpcError, RpcMethod, Runtime, Service, Subscription, UnitOfWork
from overseer_runtime.store import EventStore, Projection

log = logging.getLogger("overseer.firewall")

DEFAULT_POLICY_FILE = Path(__file__).with_name("default_policy.toml")
POLICY_FILE_PRINCIPAL = {"kind": "system", "id": "policy-file"}


def load_policy_file(path: Path) -> AdminPolicy:
    """The admin policy in a TOML file; a file that does not validate stops the firewall (fail closed)."""
    return parse_admin_policy(tomllib.loads(path.read_text(encoding="utf-8")))


def recent_events(store: EventStore, types: Sequence[str], limit: int) -> Iterator[Envelope]:
    """The last ``limit`` events of ``types`` in the store, oldest first."""
    marks = ",".join("?" * len(types))
    row = store.conn.execute(
        f"SELECT MIN(position) FROM (SELECT position FROM events WHERE type IN ({marks}) "
        "ORDER BY position DESC LIMIT ?)",
        (*types, limit),
    ).fetchone()
    if row is None or row[0] is None:
        return
    wanted = frozenset(types)
    for stored in store.read(after=int(row[0]) - 1):
        if stored.type in wanted:
            yield stored.envelope()


class FirewallService(Service):
    """Seed 004's kernel: FirewallEngine, HumanGate, PerceptionBus, AuditLog — every safety judgement."""

    name = "firewall"

    def __init__(self, *, clock: Callable[[], float] | None = None, policy_file: Path | None = None) -> None:
        self.clock = clock or time.time
        self.policy_file = policy_file
        self.state = KernelState(FirewallEngine())
        self.handlers_ = FirewallHandlers(
            self.state, Surroundings(sandbox_root="/", current_file=read_current_file, clock=self.clock)
        )
        self.prompt = PromptPolicy()
        self.roots: dict[str, str] = {"sandbox": "/", "cwd": "/", "home": "/"}
        self.runtime: Runtime | None = None

    # -- what the runtime asks ----------------------------------------------------------------
    def projections(self) -> Sequence[Projection]:
        # Order matters: approvals read fw_proposals when a verdict opens a request.
        return [ProposalsProjection(), ApprovalsProjection(), PolicyProjection(), AuditProjection()]

    def subscriptions(self) -> Sequence[Subscription]:
        return SUBSCRIPTIONS

    def handlers(self) -> Mapping[str, Handler]:
        return handler_table(self.handlers_)

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        rpc = FirewallRpc(self.handlers_, self._started_runtime, self.prompt, self.roots)
        return {name: self._when_ready(fn) for name, fn in rpc.table().items()}

    def _started_runtime(self) -> Runtime:
        if self.runtime is None:
            raise RpcError(503, "the firewall is starting")
        return self.runtime

    def _when_ready(self, fn: RpcMethod) -> RpcMethod:
        async def guarded(payload: dict[str, Any]) -> Any:
            self._started_runtime()
            return await fn(payload)

        return guarded

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self, runtime: Runtime) -> None:
        settings = runtime.settings
        cfg = settings.section("firewall")
        home = settings.home
        sandbox = home / str(settings.get("tools.sandbox", "sandbox"))
        sandbox.mkdir(parents=True, exist_ok=True)
        cwd = str(cfg.get("cwd") or os.getcwd())
        self.roots.update(sandbox=str(sandbox), cwd=cwd, home=str(home))
        resolver = RealPathResolver([str(sandbox), cwd, str(home)])
        self.state.engine = FirewallEngine(
            PolicyStore(), sandbox_root=str(sandbox), cwd=cwd, home=str(home), resolver=resolver
        )
        self.handlers_.env = Surroundings(
            sandbox_root=str(sandbox),
            current_file=read_current_file,
            clock=self.clock,
            response_grace_seconds=float(cfg.get("response_grace_seconds", 10.0)),
        )
        conn = runtime.store.conn
        anchor = self.handlers_.anchor
        anchor.bind(runtime, float(cfg.get("audit_head_linger_seconds", DEFAULT_LINGER)))
        self.state.load(PolicyQueries(conn).load())
        await self._seed_admin_policy(runtime, cfg)
        # Records committed before a crash, whose head was not yet published: anchor them now.
        await anchor.flush()
        warmed = self.state.warm(
            recent_events(runtime.store, PERCEPTION, int(cfg.get("warm_events", 20_000))),
            ProposalQueries(conn).get,
        )
        log.info(
            "firewall: policy version %s, %s recent events replayed", self.state.engine.policy.version, warmed
        )
        self.runtime = runtime
        runtime.spawn(self._timer(runtime, float(cfg.get("timer_interval_seconds", 1.0))))

    async def stop(self) -> None:
        # Anchor what was appended since the last head; the runtime drains the relay after this.
        await self.handlers_.anchor.flush()

    async def _seed_admin_policy(self, runtime: Runtime, cfg: Mapping[str, Any]) -> None:
        path = self.policy_file or Path(str(cfg.get("policy_file") or DEFAULT_POLICY_FILE))
        from_file = load_policy_file(path)
        current = self.state.engine.policy.admin
        if current.version == 0:
            by = Principal.model_validate(POLICY_FILE_PRINCIPAL)
            await runtime.execute(lambda uow: self.handlers_.replace_admin(uow, from_file, by))
            log.info("firewall: admin policy seeded from %s", path)
        elif from_file.as_dict() != current.as_dict():
            log.warning(
                "firewall: %s differs from the stored admin policy (version %s); the admin layer changes only "
                "through the admin API (PUT /v1/policy/admin)",
                path,
                current.version,
            )

    async def _timer(self, runtime: Runtime, interval: float) -> None:
        """The decider of last resort: escalate and time out unanswered requests."""
        while True:
            await asyncio.sleep(interval)
            try:
                await runtime.execute(self._check_timeouts)
            except Exception:  # a failed round is retried on the next tick
                log.exception("firewall: approval timeout check failed")

    def _check_timeouts(self, uow: UnitOfWork) -> int:
        return self.handlers_.check_timeouts(uow)
