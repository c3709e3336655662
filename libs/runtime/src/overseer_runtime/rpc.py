"""Request/reply between services over NATS: typed requests, refusals with a status, the client call.

A method is declared with the pydantic model of its request (:meth:`RpcTable.method`): the request
is validated before the method runs, and a request of the wrong shape is refused with 422 and the
validation message, so no method checks types by hand. What a method refuses on its merits (an
unknown id, a conflict) it raises as :class:`RpcError` with the status a client should see.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import orjson
from nats.aio.client import Client
from pydantic import BaseModel, ConfigDict, ValidationError

from overseer_events.subjects import Subjects

RpcMethod = Callable[[dict[str, Any]], Awaitable[Any]]
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


async def rpc_request(
    nc: Client,
    service: str,
    method: str,
    payload: dict[str, Any] | None = None,
    timeout: float = 5.0,
    *,
    subjects: Subjects | None = None,
) -> Any:
    """Ask ``service`` over NATS request/reply; raises :class:`RpcError` for its refusals and for no answer."""
    try:
        reply = await nc.request(
            (subjects or Subjects()).rpc(service, method), orjson.dumps(payload or {}), timeout=timeout
        )
    except TimeoutError as exc:
        raise RpcError(504, f"{service} did not answer {method} within {timeout}s") from exc
    except Exception as exc:  # no responders, disconnected
        raise RpcError(503, f"{service} is not reachable: {type(exc).__name__}") from exc
    answer = orjson.loads(reply.data)
    if not answer.get("ok"):
        extra = {k: v for k, v in answer.items() if k not in ("ok", "status", "detail")}
        raise RpcError(int(answer.get("status", 500)), str(answer.get("detail", "error")), extra)
    return answer.get("result")
