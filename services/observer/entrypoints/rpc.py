"""Request/reply methods (``overseer.rpc.observer.<method>``): the gateway and reasoning ask.

Answers are seed 002's models as JSON; an unknown execution or session is a 404.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from overseer.events.runtime import RpcError, RpcMethod
from overseer.observer.application.queries import ExecutionObserver
from overseer.observer.domain.errors import UnknownExecution, UnknownSession


def _text(payload: Mapping[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value:
        raise RpcError(422, f"'{key}' is required and must be a non-empty string")
    return value


def _ids(payload: Mapping[str, Any], key: str) -> list[str] | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RpcError(422, f"'{key}' must be a list of strings")
    return value


def observation_methods(observer: Callable[[], ExecutionObserver | None]) -> dict[str, RpcMethod]:
    """The RPC table; ``observer`` is looked up per call because RPC is served before the service starts."""

    def ready() -> ExecutionObserver:
        current = observer()
        if current is None:
            raise RpcError(503, "the observer is starting")
        return current

    def answer(fn: Callable[[ExecutionObserver, Mapping[str, Any]], Any]) -> RpcMethod:
        async def method(payload: dict[str, Any]) -> Any:
            try:
                return fn(ready(), payload)
            except (UnknownExecution, UnknownSession) as exc:
                raise RpcError(404, str(exc)) from exc

        return method

    return {
        "snapshot": answer(lambda o, p: o.snapshot(_text(p, "execution_id"))),
        "transitions": answer(lambda o, p: o.transitions(_text(p, "execution_id"))),
        "timeline": answer(lambda o, p: o.timeline(_text(p, "session_id"))),
        "consequence": answer(lambda o, p: o.consequence(_text(p, "execution_id"))),
        "consequences": answer(lambda o, p: o.consequences(_text(p, "session_id"), _ids(p, "execution_ids"))),
        "topology": answer(lambda o, p: o.topology()),
    }
