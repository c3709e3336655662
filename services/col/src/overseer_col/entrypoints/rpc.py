"""The COL's request/reply methods (``overseer.rpc.col.<method>``): reads, and waiting for a command.

Reads answer from the read model, which is committed state: point reads (``get``, ``suggestion``,
``command.await``) through the writer's connection between transactions, lists and searches through
the read-only reader (see ``application/ports.py``). Writes are not
RPC methods: they arrive as ``co.command.*`` events that only the gateway may
publish (NATS permissions), so no other process (an LLM-driven one least of
all) can change a CO by calling the COL directly. ``command.await`` lets the
gateway answer its REST caller synchronously: it returns once the command's
outcome is committed.

Methods (payload → answer):

* ``get`` ``{"co_id"}`` → the CO with ``execution_reports``; 404 unknown.
* ``list`` ``{"status"?, "domain"?, "type"?, "q"?, "active"?, "limit"?, "offset"?}`` → ``[CO]``,
  most recently updated first; 422 for an unknown status.
* ``list_active`` ``{}`` → ``[CO]`` not archived; ``list_by_status`` ``{"status"}`` → ``[CO]``.
* ``search`` ``{"q"}`` → ``[CO]`` whose title or description contains every term; 422 when empty.
* ``suggestions`` ``{"status"?}`` → ``[Suggestion]``; ``suggestion`` ``{"suggestion_id"}`` → one; 404.
* ``command.await`` ``{"command_id", "timeout"?}`` → ``{"command_id", "status", "co", "suggestion"}``
  once the command is committed, or its refusal as an error (404 / 409 with ``legal_triggers`` /
  422); 504 when it was not processed within ``timeout`` seconds (it stays queued).
* ``topology`` ``{}`` → the CO state machine's states, edges and forbidden pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Protocol, TypeVar

from pydantic import BeforeValidator, Field, field_validator

from overseer_col.application.ports import ColReads, CommandOutcome, CoQuery
from overseer_col.domain.model import CognitiveObject
from overseer_events.co_fields import ID_MAX_CHARS
from overseer_events.machines import CO_MACHINE, CognitiveObjectStatus
from overseer_runtime.rpc import NoArguments, RpcError, RpcRequest, RpcTable
from overseer_runtime.unit_of_work import Waiters

T = TypeVar("T")

AWAIT_DEFAULT_SECONDS = 4.0
AWAIT_MAX_SECONDS = 25.0
# Lists and searches name no more than this: a caller pages through the rest.
ALL_AT_ONCE = 10_000


class CommandWaiters:
    """``command.await`` calls, woken after the command's unit of work commits."""

    def __init__(self) -> None:
        self._waiters = Waiters()

    async def wait(self, command_id: str, timeout: float, look: Callable[[], T | None]) -> T | None:
        # Look, then wait, with no await in between: a settle() cannot slip through the gap.
        found = look()
        if found is not None:
            return found
        await self._waiters.wait(command_id, timeout)
        return look()

    def settle(self, command_id: str) -> None:
        self._waiters.wake(command_id)

    def __len__(self) -> int:
        return len(self._waiters)


# -- requests -------------------------------------------------------------------------------
# An empty status is no filter, as an absent one is.
Status = Annotated[CognitiveObjectStatus | None, BeforeValidator(lambda value: value or None)]


class GetRequest(RpcRequest):
    co_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)


class ListRequest(RpcRequest):
    status: Status = None
    domain: str | None = None
    type: str | None = None
    q: str | None = Field(default=None, max_length=500)
    active: bool = False
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class StatusRequest(RpcRequest):
    status: CognitiveObjectStatus


class SearchRequest(RpcRequest):
    q: str = Field(max_length=500)

    @field_validator("q")
    @classmethod
    def _not_blank(cls, q: str) -> str:
        if not q.strip():
            raise ValueError("the search query is empty")
        return q


class SuggestionsRequest(RpcRequest):
    status: Literal["pending", "confirmed", "dismissed"] | None = None


class SuggestionRequest(RpcRequest):
    suggestion_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)


class AwaitRequest(RpcRequest):
    command_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    timeout: float = Field(default=AWAIT_DEFAULT_SECONDS, gt=0, le=AWAIT_MAX_SECONDS)


# -- methods --------------------------------------------------------------------------------
class RunningCol(Protocol):
    """What the RPC methods ask of the COL; the runtime calls none before the service started."""

    reads: ColReads
    waiters: CommandWaiters


def rpc(col: RunningCol) -> RpcTable:
    methods = _Methods(col)
    return (
        RpcTable()
        .method("get", GetRequest, methods.get)
        .method("list", ListRequest, methods.list_cos)
        .method("list_active", NoArguments, methods.list_active)
        .method("list_by_status", StatusRequest, methods.list_by_status)
        .method("search", SearchRequest, methods.search)
        .method("suggestions", SuggestionsRequest, methods.suggestions)
        .method("suggestion", SuggestionRequest, methods.suggestion)
        .method("command.await", AwaitRequest, methods.await_command)
        .method("topology", NoArguments, methods.topology)
    )


def _listed(cos: list[CognitiveObject]) -> list[dict[str, Any]]:
    return [co.as_dict() for co in cos]


class _Methods:
    def __init__(self, col: RunningCol) -> None:
        self.col = col

    def view(self, co: CognitiveObject) -> dict[str, Any]:
        """One CO with its transitions, links and execution reports (``GET /v1/cos/{co_id}``)."""
        reports = [r.as_dict() for r in self.col.reads.cos.execution_reports(co.co_id)]
        return {**co.as_dict(), "execution_reports": reports}

    async def get(self, request: GetRequest) -> dict[str, Any]:
        co = self.col.reads.cos.get(request.co_id)
        if co is None:
            raise RpcError(404, f"no Cognitive Object {request.co_id!r}")
        return self.view(co)

    async def list_cos(self, request: ListRequest) -> list[dict[str, Any]]:
        query = CoQuery(
            status=request.status,
            domain_tag=request.domain or None,
            semantic_type=request.type or None,
            q=request.q or None,
            active_only=request.active,
            limit=request.limit,
            offset=request.offset,
        )
        return _listed(await self.col.reads.lists.find(query))

    async def list_active(self, _: NoArguments) -> list[dict[str, Any]]:
        return _listed(await self.col.reads.lists.find(CoQuery(active_only=True, limit=ALL_AT_ONCE)))

    async def list_by_status(self, request: StatusRequest) -> list[dict[str, Any]]:
        return _listed(await self.col.reads.lists.find(CoQuery(status=request.status, limit=ALL_AT_ONCE)))

    async def search(self, request: SearchRequest) -> list[dict[str, Any]]:
        return _listed(await self.col.reads.lists.find(CoQuery(q=request.q)))

    async def suggestions(self, request: SuggestionsRequest) -> list[dict[str, Any]]:
        return [s.as_dict() for s in await self.col.reads.lists.suggestions(request.status)]

    async def suggestion(self, request: SuggestionRequest) -> dict[str, Any]:
        found = self.col.reads.cos.suggestion(request.suggestion_id)
        if found is None:
            raise RpcError(404, f"no suggestion {request.suggestion_id!r}")
        return found.as_dict()

    async def await_command(self, request: AwaitRequest) -> dict[str, Any]:
        outcome = await self.col.waiters.wait(
            request.command_id, request.timeout, lambda: self.col.reads.commands.outcome(request.command_id)
        )
        if outcome is None:
            raise RpcError(
                504,
                f"col has not processed command {request.command_id} within {request.timeout}s; "
                "it stays queued and will still be applied",
                {"command_id": request.command_id},
            )
        return self.answer(outcome)

    def answer(self, outcome: CommandOutcome) -> dict[str, Any]:
        if not outcome.ok:
            extra: dict[str, Any] = {"command_id": outcome.command_id}
            if outcome.legal_triggers:
                extra["legal_triggers"] = outcome.legal_triggers
            raise RpcError(outcome.status, outcome.detail or "refused", extra)
        cos = self.col.reads.cos
        co = cos.get(outcome.co_id) if outcome.co_id else None
        suggestion = cos.suggestion(outcome.suggestion_id) if outcome.suggestion_id else None
        return {
            "command_id": outcome.command_id,
            "status": outcome.status,
            "co": self.view(co) if co is not None else None,
            "suggestion": suggestion.as_dict() if suggestion is not None else None,
        }

    async def topology(self, _: NoArguments) -> dict[str, Any]:
        return CO_MACHINE.topology()
