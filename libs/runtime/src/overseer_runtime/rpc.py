"""Request/reply between services over NATS: typed requests, refusals with a status, the server, the client call.

A method is declared with the pydantic model of its request (:meth:`RpcTable.method`): the request
is validated before the method runs, and a request of the wrong shape is refused with 422 and the
validation message, so no method checks types by hand. What a method refuses on its merits (an
unknown id, a conflict) it raises as :class:`RpcError` with the status a client should see.

:class:`RpcServer` answers a service's methods on ``<namespace>.rpc.<service>.<method>``, one task
per request, and ``health``. Until the service's ``start()`` has returned (its recovery) every
method but ``health`` answers a retryable 503 ``<service> is starting``: one gate for every
service, so none guards its methods by hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import nats.errors
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from pydantic import BaseModel, ConfigDict, ValidationError

from overseer_events.subjects import Subjects

log = logging.getLogger("overseer.runtime")

RpcMethod = Callable[[dict[str, Any]], Awaitable[Any]]
Spawn = Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]
P = TypeVar("P", bound=BaseModel)


class RpcError(Exception):
    """A refusal answered over RPC, with an HTTP-like status (404, 409, 422 …) and a human ``detail``."""

    def __init__(self, status: int, detail: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.extra = extra or {}


class StoreUnavailable(RpcError):
    """A command refused because the service's store refuses writes (503): nothing was done."""

    def __init__(self, service: str, exc: BaseException) -> None:
        super().__init__(503, f"{service} cannot write its store ({exc}): nothing was done; try again later")


class RpcRequest(BaseModel):
    """Base of every request model: immutable, and a key the method does not know is refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class NoArguments(RpcRequest):
    """The request of a method that takes nothing."""


class RpcTable:
    """A service's RPC methods by name, each with the model its request must satisfy."""

    def __init__(self) -> None:
        self._methods: dict[str, RpcMethod] = {}

    def method(self, name: str, request: type[P], answer: Callable[[P], Awaitable[Any]]) -> RpcTable:
        if name in self._methods:
            raise ValueError(f"RPC method {name!r} is declared twice")

        async def call(payload: dict[str, Any]) -> Any:
            try:
                parsed = request.model_validate(payload)
            except ValidationError as exc:
                raise RpcError(422, validation_detail(exc)) from None
            return await answer(parsed)

        self._methods[name] = call
        return self

    def methods(self) -> Mapping[str, RpcMethod]:
        return dict(self._methods)


def validation_detail(exc: ValidationError) -> str:
    """``field: message`` for each problem pydantic found, the way a person reads them."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    return "; ".join(parts)


class RpcServer:
    """Answers ``service``'s RPC methods, ``health`` and ``metrics`` on ``nc``; its own methods only once
    :meth:`open`.

    ``spawn`` runs each answer as a task of its own, so one slow method does not hold up the others.
    """

    def __init__(self, service: str, subjects: Subjects, spawn: Spawn) -> None:
        self.service = service
        self.subjects = subjects
        self._spawn = spawn
        self.open = False  # the service's start() returned: methods other than health answer

    async def serve(
        self, nc: Client, methods: Mapping[str, RpcMethod], always: Mapping[str, RpcMethod]
    ) -> None:
        """Subscribe to the ``always`` methods (``health``, ``metrics``: answered while the service is
        still starting) and to each of ``methods`` (answered once open)."""
        for name, method in always.items():
            await self._subscribe(nc, name, method, gated=False)
        for name, method in methods.items():
            await self._subscribe(nc, name, method, gated=True)

    async def _subscribe(self, nc: Client, name: str, method: RpcMethod, *, gated: bool) -> None:
        async def answer(msg: Msg) -> None:
            body = await self.answer(method, msg.data, gated=gated)
            if msg.reply:
                await nc.publish(msg.reply, body)

        async def spawn_answer(msg: Msg) -> None:
            self._spawn(answer(msg))

        subject = self.subjects.rpc(self.service, name)
        await nc.subscribe(subject, queue=self.service, cb=spawn_answer)

    async def answer(self, method: RpcMethod, data: bytes, *, gated: bool = True) -> bytes:
        """The reply to a request ``data`` for ``method``: ``{"ok": true, "result": …}`` or the refusal."""
        try:
            if gated and not self.open:
                raise RpcError(503, f"{self.service} is starting")
            payload = orjson.loads(data) if data else {}
            if not isinstance(payload, dict):
                raise RpcError(422, "the request body must be a JSON object")
            result = await method(payload)
            return orjson.dumps({"ok": True, "result": result}, default=json_default)
        except RpcError as exc:
            return orjson.dumps({"ok": False, "status": exc.status, "detail": exc.detail, **exc.extra})
        except orjson.JSONDecodeError:
            return orjson.dumps({"ok": False, "status": 422, "detail": "the request is not JSON"})
        except Exception as exc:
            log.exception("%s: rpc failed", self.service)
            detail = f"{self.service} failed: {type(exc).__name__}: {exc}"
            return orjson.dumps({"ok": False, "status": 500, "detail": detail})


def json_default(obj: Any) -> Any:
    """What a method's result may hold besides JSON: pydantic models, sets (sorted)."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


async def rpc_request(
    nc: Client,
    service: str,
    method: str,
    payload: dict[str, Any] | None = None,
    timeout: float = 5.0,
    *,
    subjects: Subjects | None = None,
) -> Any:
    """Ask ``service`` over NATS request/reply; raises :class:`RpcError` for its refusals and for no answer.

    Three failures stay apart, so a caller never reads one as another: a request that cannot be
    encoded (422: a value JSON cannot carry, such as an integer beyond 64 bits, is the asker's error),
    no answer in time (504) or nobody to answer (503, ``not reachable``), and the service's own
    refusal or failure (its status: 4xx, or 500 when the method failed)."""
    try:
        body = orjson.dumps(payload or {})
    except TypeError as exc:
        raise RpcError(422, f"the request to {service} cannot be sent: {exc}") from exc
    try:
        reply = await nc.request((subjects or Subjects()).rpc(service, method), body, timeout=timeout)
    except TimeoutError as exc:
        raise RpcError(504, f"{service} did not answer {method} within {timeout}s") from exc
    except nats.errors.Error as exc:  # no responders, disconnected, a permissions violation
        raise RpcError(503, f"{service} is not reachable: {type(exc).__name__}") from exc
    answer = orjson.loads(reply.data)
    if not answer.get("ok"):
        extra = {k: v for k, v in answer.items() if k not in ("ok", "status", "detail")}
        raise RpcError(int(answer.get("status", 500)), str(answer.get("detail", "error")), extra)
    return answer.get("result")
