"""Request/reply methods (``overseer.rpc.observer.<method>``): the gateway and reasoning ask.

Answers are the observation models of ``overseer_events.views`` as JSON; an unknown execution or session is a 404. Each request is
a pydantic model, validated by the runtime (422 with the validation message).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from pydantic import Field, StrictFloat, StrictInt

from overseer_events.machines import ExecutionStatus
from overseer_events.views import (
    ExecutionConsequenceView,
    ExecutionPage,
    ExecutionSnapshot,
    ExecutionTimeline,
    StateMachineTopology,
    TransitionRecord,
)
from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.domain.errors import UnknownExecution, UnknownSession
from overseer_observer.domain.listing import ExecutionQuery, Position
from overseer_runtime.rpc import NoArguments, RpcError, RpcRequest, RpcTable

Id = Field(min_length=1)


class ExecutionRequest(RpcRequest):
    execution_id: str = Id


class SessionRequest(RpcRequest):
    session_id: str = Id


MAX_PAGE = 500


class ExecutionsRequest(RpcRequest):
    """Filters (each optional), where a previous page ended (``cursor``), and a page's size."""

    session_id: str | None = Field(default=None, min_length=1, max_length=128)
    status: ExecutionStatus | None = None
    tool: str | None = Field(default=None, min_length=1, max_length=128)
    since: StrictFloat | StrictInt | None = Field(default=None, ge=0, le=1e11)
    cursor: str | None = Field(default=None, min_length=3, max_length=200)
    limit: StrictInt = Field(default=50, ge=1, le=MAX_PAGE)

    def query(self) -> ExecutionQuery:
        try:
            after = Position.parse(self.cursor) if self.cursor is not None else None
        except ValueError as exc:
            raise RpcError(422, f"cursor: {exc}") from None
        return ExecutionQuery(
            limit=self.limit,
            session_id=self.session_id,
            status=self.status.value if self.status is not None else None,
            tool=self.tool,
            since=float(self.since) if self.since is not None else None,
            after=after,
        )


class ConsequencesRequest(RpcRequest):
    session_id: str = Id
    execution_ids: list[str] | None = None  # only these of the session's executions


class RunningObserver(Protocol):
    """What the RPC methods ask of the observer; the runtime calls none before the service started."""

    queries: ExecutionObserver

    async def caught_up(self) -> None:
        """Fold at once the events delivered and held back to gather (the observer folds in bursts), so
        a question asked right after an execution moved is answered with the move."""


def rpc(observer: RunningObserver) -> RpcTable:
    methods = _Methods(observer)
    return (
        RpcTable()
        .method("snapshot", ExecutionRequest, methods.snapshot)
        .method("transitions", ExecutionRequest, methods.transitions)
        .method("timeline", SessionRequest, methods.timeline)
        .method("consequences", ConsequencesRequest, methods.consequences)
        .method("topology", NoArguments, methods.topology)
        .method("executions.list", ExecutionsRequest, methods.executions_list)
    )


@contextmanager
def _known() -> Iterator[None]:
    try:
        yield
    except (UnknownExecution, UnknownSession) as exc:
        raise RpcError(404, str(exc)) from exc


class _Methods:
    def __init__(self, observer: RunningObserver) -> None:
        self.observer = observer

    # Each question about executions first has what was delivered folded (``caught_up``).
    async def snapshot(self, r: ExecutionRequest) -> ExecutionSnapshot:
        await self.observer.caught_up()
        with _known():
            return self.observer.queries.snapshot(r.execution_id)

    async def transitions(self, r: ExecutionRequest) -> list[TransitionRecord]:
        await self.observer.caught_up()
        with _known():
            return self.observer.queries.transitions(r.execution_id)

    async def timeline(self, r: SessionRequest) -> ExecutionTimeline:
        await self.observer.caught_up()
        with _known():
            return await self.observer.queries.timeline(r.session_id)

    async def consequences(self, r: ConsequencesRequest) -> list[ExecutionConsequenceView]:
        await self.observer.caught_up()
        return await self.observer.queries.consequences(r.session_id, r.execution_ids)

    async def topology(self, _: NoArguments) -> StateMachineTopology:
        return self.observer.queries.topology()

    async def executions_list(self, r: ExecutionsRequest) -> ExecutionPage:
        await self.observer.caught_up()
        return await self.observer.queries.executions_page(r.query())
