"""Request/reply between services over NATS: typed requests, refusals with a status, the server, the client call.

A method is declared with the pydantic model of its request (:meth:`RpcTable.method`): the request
is validated before the method runs, and a request of the wrong shape is refused with 422 and the
validation message, so no method checks types by hand. What a method refuses on its merits (an
unknown id, a conflict) it raises as :class:`RpcError` with the status a client should see.

:class:`RpcServer` answers a service's methods on ``<namespace>.rpc.<service>.<method>``, one task
per request, and ``health``. Until the service's ``start()`` has returned (its recovery) every
method but ``health`` answers a retryable 503 ``<service> is starting``: one gate for every
service, so none guards its methods by hand.

A service running as several partitions (:mod:`overseer_runtime.partitions`) answers in a queue
group, so one replica takes each request, except for the methods each replica answers from its own
store (:data:`~overseer_events.subjects.PARTITIONED_RPC`, and ``health``): every replica receives
those, and :func:`rpc_request` gathers the replies and combines them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, TypeVar

import nats.errors
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from pydantic import BaseModel, ConfigDict, ValidationError

from overseer_events.subjects import Gathering, Subjects, asked_of_every_replica, gathering
from overseer_runtime.partitions import Partition

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

    def __init__(
        self, service: str, subjects: Subjects, spawn: Spawn, partition: Partition = Partition()
    ) -> None:
        self.service = service
        self.subjects = subjects
        self._spawn = spawn
        self.partition = partition
        # A replica says which partition answered, so the caller knows which have.
        self._stamp: dict[str, Any] = {} if partition.alone else {"partition": partition.index}
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
        mode = gathering(self.service, name)
        if mode == "first" and self.partition.index > 0:
            return  # partition 0 alone answers it: it keeps what is asked
        every_replica = not self.partition.alone and asked_of_every_replica(mode)
        await nc.subscribe(subject, queue="" if every_replica else self.service, cb=spawn_answer)

    async def answer(self, method: RpcMethod, data: bytes, *, gated: bool = True) -> bytes:
        """The reply to a request ``data`` for ``method``: ``{"ok": true, "result": …}`` or the refusal."""
        try:
            if gated and not self.open:
                raise RpcError(503, f"{self.service} is starting")
            payload = orjson.loads(data) if data else {}
            if not isinstance(payload, dict):
                raise RpcError(422, "the request body must be a JSON object")
            result = await method(payload)
            return orjson.dumps({"ok": True, "result": result, **self._stamp}, default=json_default)
        except RpcError as exc:
            return self._refusal(exc.status, exc.detail, exc.extra)
        except orjson.JSONDecodeError:
            return self._refusal(422, "the request is not JSON")
        except Exception as exc:
            log.exception("%s: rpc failed", self.service)
            return self._refusal(500, f"{self.service} failed: {type(exc).__name__}: {exc}")

    def _refusal(self, status: int, detail: str, extra: Mapping[str, Any] | None = None) -> bytes:
        return orjson.dumps({"ok": False, "status": status, "detail": detail, **(extra or {}), **self._stamp})


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
    partitions: Mapping[str, int] | None = None,
) -> Any:
    """Ask ``service`` over NATS request/reply; raises :class:`RpcError` for its refusals and for no answer.

    Three failures stay apart, so a caller never reads one as another: a request that cannot be
    encoded (422: a value JSON cannot carry, such as an integer beyond 64 bits, is the asker's error),
    no answer in time (504) or nobody to answer (503, ``not reachable``), and the service's own
    refusal or failure (its status: 4xx, or 500 when the method failed).

    ``partitions`` (service → count) says which services run as several replicas: a method every
    replica answers is asked of them all, and their replies combined (:func:`combine`); one that
    partition 0 alone answers (``first``) is asked of it. A method whose replies are kept ``each``
    (``metrics``) or ``all`` answers a list, of one for a service running alone."""
    try:
        body = orjson.dumps(payload or {})
    except TypeError as exc:
        raise RpcError(422, f"the request to {service} cannot be sent: {exc}") from exc
    subject = (subjects or Subjects()).rpc(service, method)
    count = (partitions or {}).get(service, 1)
    mode = gathering(service, method)
    if asked_of_every_replica(mode) and count > 1:
        # A replica that is down is waited for until the timeout, unless one answer settles it.
        answers = await _ask_every_replica(nc, subject, body, timeout, count, stop_early=mode == "found")
        return combine(mode, service, method, answers, count, timeout)
    try:
        reply = await nc.request(subject, body, timeout=timeout)
    except TimeoutError as exc:
        raise RpcError(504, f"{service} did not answer {method} within {timeout}s") from exc
    except nats.errors.Error as exc:  # no responders, disconnected, a permissions violation
        raise RpcError(503, f"{service} is not reachable: {type(exc).__name__}") from exc
    result = _result(orjson.loads(reply.data))
    return [result] if mode in ("each", "all") else result


def _result(answer: dict[str, Any]) -> Any:
    """The result of one reply, or its refusal raised."""
    if not answer.get("ok"):
        raise _refusal(answer)
    return answer.get("result")


def _refusal(answer: dict[str, Any]) -> RpcError:
    extra = {k: v for k, v in answer.items() if k not in ("ok", "status", "detail", "partition")}
    return RpcError(int(answer.get("status", 500)), str(answer.get("detail", "error")), extra)


async def _ask_every_replica(
    nc: Client, subject: str, body: bytes, timeout: float, count: int, *, stop_early: bool
) -> dict[int, dict[str, Any]]:
    """Each replica's reply by partition, as many as came within ``timeout``; with ``stop_early``, only
    until one replica answers with anything but 404 (the one that holds what was asked)."""
    answers: dict[int, dict[str, Any]] = {}
    enough = asyncio.Event()

    async def on_reply(msg: Msg) -> None:
        answer = orjson.loads(msg.data)
        answers[int(answer.get("partition", 0))] = answer
        if len(answers) >= count or (stop_early and _holds(answer)):
            enough.set()

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, cb=on_reply)
    try:
        await nc.publish(subject, body, reply=inbox)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(enough.wait(), timeout)
    except nats.errors.Error as exc:
        raise RpcError(503, f"{subject} is not reachable: {type(exc).__name__}") from exc
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return answers


_HEALTH_ORDER = ("ok", "starting", "degraded", "down")


def combine(
    mode: Gathering,
    service: str,
    method: str,
    answers: Mapping[int, dict[str, Any]],
    count: int,
    timeout: float,
) -> Any:
    """One result from the replies of a partitioned service's replicas (by partition).

    ``found``: the answer of the replica that holds what was asked — a result, or a refusal on its
    merits such as 409 — and 404 only when every replica said 404. ``merged``: every replica's list,
    in partition order. ``health``: one health whose ``ready`` and ``status`` are the worst replica's,
    lag and backlog summed, each replica's own under ``partitions`` (a silent one ``down``).
    ``each``: the result of every replica that answered, in partition order; ``all``: the result of
    every replica, in partition order. A replica that is silent or could not say (503 while it
    starts, say) makes ``found``, ``merged`` and ``all`` a 503 naming it: what it holds may be the
    answer, so none is made up without it.
    """
    if mode == "health":
        return _combined_health(service, answers, count)
    if not answers:
        raise RpcError(503, f"{service} is not reachable: none of its {count} partitions answered {method}")
    if mode == "each":
        return [_result(answers[index]) for index in sorted(answers)]
    if mode == "found":
        return _found(service, method, answers, count, timeout)
    if mode == "all":
        return _every(service, method, answers, count, timeout)
    return _merged(service, method, answers, count, timeout)


def _found(
    service: str, method: str, answers: Mapping[int, dict[str, Any]], count: int, timeout: float
) -> Any:
    """The answer of the replica that holds what was asked; 404 only when every replica said so."""
    held = [answer for answer in answers.values() if _holds(answer)]
    if held:
        return _result(held[0])
    _unless_unsure(
        service,
        method,
        answers,
        [i for i in range(count) if answers.get(i, {}).get("status") != 404],
        timeout,
    )
    return _result(answers[0])  # every replica said 404


def _merged(
    service: str, method: str, answers: Mapping[int, dict[str, Any]], count: int, timeout: float
) -> list[Any]:
    """Every replica's list, in partition order, joined."""
    return [item for result in _every(service, method, answers, count, timeout) for item in result]


def _every(
    service: str, method: str, answers: Mapping[int, dict[str, Any]], count: int, timeout: float
) -> list[Any]:
    """Every replica's result, in partition order; a refusal on its merits (422 …) is every replica's."""
    refused = [a for a in answers.values() if not a.get("ok") and 400 <= int(a.get("status", 500)) < 500]
    if refused:
        raise _refusal(refused[0])
    _unless_unsure(
        service, method, answers, [i for i in range(count) if not answers.get(i, {}).get("ok")], timeout
    )
    return [_result(answers[index]) for index in range(count)]


def _unless_unsure(
    service: str, method: str, answers: Mapping[int, dict[str, Any]], unsure: list[int], timeout: float
) -> None:
    """Refuse with 503, naming them, when some partitions were silent or could not say."""
    if unsure:
        said = "; ".join(
            f"partition {index}: " + (str(answers[index].get("detail")) if index in answers else "no answer")
            for index in unsure
        )
        raise RpcError(503, f"{service} could not answer {method} in full within {timeout}s ({said})")


def _holds(answer: dict[str, Any]) -> bool:
    """Whether a replica's reply is the answer of the one that holds what was asked: a result, or a
    refusal on its merits (a 4xx other than 404; a 5xx says it could not tell)."""
    status = int(answer.get("status", 500))
    return bool(answer.get("ok")) or (400 <= status < 500 and status != 404)


def _combined_health(service: str, answers: Mapping[int, dict[str, Any]], count: int) -> dict[str, Any]:
    each: dict[str, dict[str, Any]] = {}
    for index in range(count):
        answer = answers.get(index)
        if answer is not None and answer.get("ok"):
            each[str(index)] = dict(answer["result"])
        else:
            detail = "did not answer" if answer is None else str(answer.get("detail"))
            each[str(index)] = {"service": service, "status": "down", "ready": False, "error": detail}
    first = each["0"]
    return {
        **first,
        "status": max((h.get("status", "down") for h in each.values()), key=_health_rank),
        "ready": all(h.get("ready") for h in each.values()),
        "consumer_lag": sum(int(h.get("consumer_lag") or 0) for h in each.values()),
        "relay_backlog": sum(int(h.get("relay_backlog") or 0) for h in each.values()),
        "partitions": each,
    }


def _health_rank(status: str) -> int:
    return _HEALTH_ORDER.index(status) if status in _HEALTH_ORDER else len(_HEALTH_ORDER)
