"""The executor's store built two ways, for the contract suites: in memory, and in SQLite on a real file.

Both are driven the same way: the executor's real handlers (an :class:`ExecutorHarness`) decide
the events, so every history is one the executor could have made. The SQLite side is the
runtime's: a real :class:`EventStore` records what other services said and applies the read
models, and the executor's own events go through the runtime's :class:`UnitOfWork`, its ``emit``
bound to the executor as in the service.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from overseer_events.envelope import Envelope
from overseer_events.subjects import AWAITED_HEADER, Subjects
from overseer_executor.adapters.contracts_sql import (
    ContractsProjection,
    RefusedDecisionsProjection,
    SqliteContractRepository,
    SqliteExecutorQueries,
)
from overseer_executor.application.ports import ContractRepository, ExecutorQueries
from overseer_executor.domain.rules import ToolOutcome, ToolOutcomeKind
from overseer_runtime.readers import ReadModelReader
from overseer_runtime.store import EventStore
from overseer_runtime.unit_of_work import Emit, Emitter, UnitOfWork
from tests.fakes.executor import ExecutorHarness, FakeClock, FakeTools
from tests.unit.executor.executor_builders import (
    DIR_READ,
    EMAIL,
    FS_LIST,
    event,
    human,
    proposal,
    session_cancel,
    verdict_issued,
)

BACKENDS = ("fake", "sqlite")
SUBJECTS = Subjects("contract")


class SqliteStore:
    """The executor's store in ``path``: the SQL read models, the ports that read them, its sink."""

    def __init__(self, path: Path) -> None:
        self.store = EventStore(path)
        projections = (ContractsProjection(), RefusedDecisionsProjection())
        self.store.create_projections(projections)
        self.emitter = Emitter("executor", self.store, SUBJECTS, projections)
        self.reader = ReadModelReader(path)

    @property
    def contracts(self) -> ContractRepository:
        return SqliteContractRepository(self.store.conn)

    @property
    def queries(self) -> ExecutorQueries:
        return SqliteExecutorQueries(self.store, self.reader)

    def transaction(self) -> AbstractContextManager[Any]:
        return self.store.transaction()

    def receive(self, event: Envelope) -> None:
        subject = SUBJECTS.event(event.actor.partition(":")[0], event.type)
        self.store.record_received(event, event.encode(), subject, None)
        for projection in self.emitter.projections:
            projection.apply(self.store.conn, event)

    def emit_for(self, incoming: Envelope | None) -> Emit:
        return UnitOfWork(self.emitter, incoming).emit_as("executor")

    def emitted(self) -> list[Envelope]:
        return [stored.envelope() for stored in self.store.read(origin="local")]

    def awaited(self) -> set[str]:
        return {
            stored.event_id
            for stored in self.store.read(origin="local")
            if AWAITED_HEADER in stored.header_map()
        }

    async def open(self) -> None:
        await self.reader.open()

    async def close(self) -> None:
        await self.reader.close()
        self.store.close()


class Backend(ExecutorHarness):
    """A harness with helpers that play the other services' part (reasoning, the firewall, a human)."""

    def __init__(self, sqlite: SqliteStore | None = None, *, holds_starts: bool = False) -> None:
        tools = FakeTools([EMAIL, FS_LIST, DIR_READ])
        super().__init__(tools, FakeClock(1_000.0), sqlite, holds_starts=holds_starts)
        self.sqlite = sqlite

    def propose(self, execution_id: str, **kw: Any) -> None:
        """A new proposal, a second after the previous step (contracts are listed by creation time)."""
        self.clock.advance(1)
        self.deliver(event(proposal(execution_id, **kw), session_id=kw.get("session_id", "session-abc")))

    def verdict(
        self, execution_id: str, decision: str = "allow", args: dict[str, Any] | None = None, **kw: Any
    ) -> None:
        self.clock.advance(1)
        self.deliver(event(verdict_issued(execution_id, decision, args, **kw)))

    def decide(self, execution_id: str, decision: str = "approve", **kw: Any) -> None:
        self.clock.advance(1)
        self.deliver(event(human(execution_id, decision, **kw)))

    def cancel_session(self, session_id: str = "session-abc") -> None:
        self.deliver(event(session_cancel(session_id), session_id=session_id))

    def tool_ends(self, execution_id: str, kind: ToolOutcomeKind = "succeeded", text: str = "ok") -> None:
        """The tool of a RUNNING contract returned (its after-commit call is not run: tools are not tested)."""
        self.after_commit.clear()
        self.execute(
            lambda unit: self.execution.record_tool_outcome(unit, execution_id, ToolOutcome(kind, text))
        )

    def held(self, execution_id: str, **kw: Any) -> None:
        """An ``email.send`` WAITING on its approval card."""
        self.propose(execution_id, **kw)
        self.verdict(
            execution_id,
            "hold",
            kw.get("args"),
            level="APPROVE",
            session_id=kw.get("session_id", "session-abc"),
        )

    def card(self, execution_id: str) -> None:
        """An ``email.send`` WAITING on an approval card as a store older than the claim may hold one."""
        self.clock.advance(1)
        self.card_as_before(proposal(execution_id), EMAIL)

    def completed(self, execution_id: str, **kw: Any) -> None:
        """An ``email.send`` that ran and COMPLETED."""
        self.propose(execution_id, **kw)
        self.verdict(
            execution_id,
            "allow",
            kw.get("args"),
            level="APPROVE",
            session_id=kw.get("session_id", "session-abc"),
        )
        self.tool_ends(execution_id)


async def make_backend(kind: str, tmp_path: Path, *, holds_starts: bool = False) -> Backend:
    """``holds_starts``: a call's start is held back to be told with its end (see ExecutorHarness)."""
    if kind == "fake":
        return Backend(holds_starts=holds_starts)
    sqlite = SqliteStore(tmp_path / "executor.db")
    await sqlite.open()
    return Backend(sqlite, holds_starts=holds_starts)


async def close_backend(backend: Backend) -> None:
    if backend.sqlite is not None:
        await backend.sqlite.close()
