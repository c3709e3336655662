"""The observer service: read-only projections of every execution event, and the queries over them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence

from overseer_observer.adapters.read_models import ExecutionObservations, SqliteObservationReader
from overseer_observer.application.handlers import TransitionAnnouncer
from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.entrypoints.rpc import observation_methods
from overseer_runtime.runtime import Handler, RpcMethod, Runtime, Service, Subscription
from overseer_runtime.store import Projection

PROPOSED = ("execution.proposed",)
# The contract follows a proposal by two hops (firewall, executor); a held or denied one may never.
PROPOSAL_GATHER = 0.02


class ObserverService(Service):
    name = "observer"

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.observations = ExecutionObservations()
        self.observer: ExecutionObserver | None = None
        self._reads: sqlite3.Connection | None = None
        self.runtime: Runtime | None = None

    def projections(self) -> Sequence[Projection]:
        return [self.observations]

    def subscriptions(self) -> Sequence[Subscription]:
        return [
            Subscription(owner="executor", types=("execution.contract_created", "execution.transitioned")),
            # Proposals give the PENDING moment and an explicit summary; both agents' prefixes carry them.
            # Off the critical path: a proposal waits for the contract that follows it (see gather).
            Subscription(owner="reasoning", types=PROPOSED, gather=PROPOSAL_GATHER),
            Subscription(owner="gateway", types=PROPOSED, gather=PROPOSAL_GATHER),
        ]

    def handlers(self) -> Mapping[str, Handler]:
        return {"execution.transitioned": TransitionAnnouncer(self.observations)}

    def rpc_methods(self) -> Mapping[str, RpcMethod]:
        return observation_methods(lambda: self.observer, self._wait_for_change)

    async def _wait_for_change(self, execution_id: str, timeout: float) -> bool:
        if self.runtime is None:
            return False
        return await self.runtime.wait_for_change(execution_id, timeout)

    async def start(self, runtime: Runtime) -> None:
        self.runtime = runtime
        # Queries read through their own connection: WAL lets them see the last commit
        # without ever touching the writer connection the consumers' transactions use.
        self._reads = sqlite3.connect(
            f"file:{runtime.store.path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )
        self.observer = ExecutionObserver(SqliteObservationReader(self._reads), self.clock)

    async def stop(self) -> None:
        self.observer = None
        if self._reads is not None:
            self._reads.close()
            self._reads = None
