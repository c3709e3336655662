"""The COL's request/reply methods (``overseer.rpc.col.<method>``): reads, and waiting for a command.

Reads answer from the read model, which is committed state. Writes are not
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

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from overseer_col.adapters.read_model import SqliteCommandLog, SqliteCoRepository
from overseer_col.application.registry import parse_status
from overseer_col.domain.errors import CoNotFound, CoRefused
from overseer_col.domain.model import CognitiveObject, describe
from overseer_col.domain.ports import CommandOutcome, CoQuery
from overseer_events.co_fields import ID_MAX_CHARS
from overseer_events.machines import CO_MACHINE
from overseer_runtime.runtime import RpcError, RpcMethod

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

AWAIT_DEFAULT_SECONDS = 4.0
AWAIT_MAX_SECONDS = 25.0


class CommandWaiters:
    """Futures of ``command.await`` calls, woken after the command's unit of work commits."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    async def wait(self, command_id: str, timeout: float, look: Callable[[], T | None]) -> T | None:
        # Look, then register, with no await in between: a settle() cannot slip through the gap.
        found = look()
        if found is not None:
            return found
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(command_id, []).append(future)
        try:
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            pass
        finally:
            futures = self._waiting.get(command_id, [])
            if future in futures:
                futures.remove(future)
            if not futures:
                self._waiting.pop(command_id, None)
        return look()

    def settle(self, command_id: str) -> None:
        for future in self._waiting.pop(command_id, []):
            if not future.done():
                future.set_result(None)

    def __len__(self) -> int:
        return sum(len(f) for f in self._waiting.values())


# -- payloads -------------------------------------------------------------------------------
class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class GetRequest(_Payload):
    co_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)


class ListRequest(_Payload):
    status: str | None = None
    domain: str | None = None
    type: str | None = None
    q: str | None = Field(default=None, max_length=500)
    active: bool = False
    limit: int = Field(default=100, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)


class StatusRequest(_Payload):
    status: str


class SearchRequest(_Payload):
    q: str = Field(max_length=500)


class SuggestionsRequest(_Payload):
    status: Literal["pending", "confirmed", "dismissed"] | None = None


class SuggestionRequest(_Payload):
    suggestion_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)


class AwaitRequest(_Payload):
    command_id: str = Field(min_length=1, max_length=ID_MAX_CHARS)
    timeout: float = Field(default=AWAIT_DEFAULT_SECONDS, gt=0, le=AWAIT_MAX_SECONDS)


def parse(model: type[M], payload: dict[str, Any]) -> M:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        raise RpcError(422, describe(exc)) from exc


def refused(refusal: CoRefused) -> RpcError:
    extra = (
        {"legal_triggers": refusal.legal_triggers} if refusal.status == 409 and refusal.legal_triggers else {}
    )
    return RpcError(refusal.status, refusal.detail, extra)


class ColRpc:
    """The method table; reads go through ``conn`` (the service's store connection, between transactions)."""

    def __init__(self, conn: Callable[[], sqlite3.Connection], waiters: CommandWaiters) -> None:
        self._conn = conn
        self.waiters = waiters

    def table(self) -> dict[str, RpcMethod]:
        return {
            "get": self.get,
            "list": self.list_cos,
            "list_active": self.list_active,
            "list_by_status": self.list_by_status,
            "search": self.search,
            "suggestions": self.suggestions,
            "suggestion": self.suggestion,
            "command.await": self.await_command,
            "topology": self.topology,
        }

    @property
    def repo(self) -> SqliteCoRepository:
        return SqliteCoRepository(self._conn())

    def view(self, co: CognitiveObject) -> dict[str, Any]:
        """One CO with its transitions, links and execution reports (``GET /v1/cos/{co_id}``)."""
        reports = [r.as_dict() for r in self.repo.execution_reports(co.co_id)]
        return {**co.as_dict(), "execution_reports": reports}

    def _found(self, co_id: str) -> CognitiveObject:
        co = self.repo.get(co_id)
        if co is None:
            raise refused(CoNotFound(f"no Cognitive Object {co_id!r}"))
        return co

    # -- methods --------------------------------------------------------------------------
    async def get(self, payload: dict[str, Any]) -> dict[str, Any]:
        return self.view(self._found(parse(GetRequest, payload).co_id))

    async def list_cos(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        request = parse(ListRequest, payload)
        try:
            status = parse_status(request.status) if request.status else None
        except CoRefused as refusal:
            raise refused(refusal) from None
        query = CoQuery(
            status=status,
            domain_tag=request.domain or None,
            semantic_type=request.type or None,
            q=request.q or None,
            active_only=request.active,
            limit=request.limit,
            offset=request.offset,
        )
        return [co.as_dict() for co in self.repo.find(query)]

    async def list_active(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        return [co.as_dict() for co in self.repo.find(CoQuery(active_only=True, limit=10_000))]

    async def list_by_status(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            status = parse_status(parse(StatusRequest, payload).status)
        except CoRefused as refusal:
            raise refused(refusal) from None
        return [co.as_dict() for co in self.repo.find(CoQuery(status=status, limit=10_000))]

    async def search(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        q = parse(SearchRequest, payload).q
        if not q.strip():
            raise RpcError(422, "the search query is empty")
        return [co.as_dict() for co in self.repo.find(CoQuery(q=q))]

    async def suggestions(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        return [s.as_dict() for s in self.repo.suggestions(parse(SuggestionsRequest, payload).status)]

    async def suggestion(self, payload: dict[str, Any]) -> dict[str, Any]:
        suggestion_id = parse(SuggestionRequest, payload).suggestion_id
        found = self.repo.suggestion(suggestion_id)
        if found is None:
            raise RpcError(404, f"no suggestion {suggestion_id!r}")
        return found.as_dict()

    async def await_command(self, payload: dict[str, Any]) -> dict[str, Any]:
        request = parse(AwaitRequest, payload)
        outcome = await self.waiters.wait(
            request.command_id,
            request.timeout,
            lambda: SqliteCommandLog(self._conn()).outcome(request.command_id),
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
        co = self.repo.get(outcome.co_id) if outcome.co_id else None
        suggestion = self.repo.suggestion(outcome.suggestion_id) if outcome.suggestion_id else None
        return {
            "command_id": outcome.command_id,
            "status": outcome.status,
            "co": self.view(co) if co is not None else None,
            "suggestion": suggestion.as_dict() if suggestion is not None else None,
        }

    async def topology(self, payload: dict[str, Any]) -> dict[str, Any]:
        return CO_MACHINE.topology()
