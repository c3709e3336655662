"""Request/reply methods (``overseer.rpc.observer.<method>``): the gateway and reasoning ask.

Answers are seed 002's models as JSON; an unknown execution or session is a 404.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from overseer_observer.application.queries import ExecutionObserver
from overseer_observer.domain.errors import UnknownExecution, UnknownSession
from overseer_runtime.runtime import RpcError, RpcMethod


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


MAX_WAIT_SECONDS = 60.0
ChangeWait = Callable[[str, float], Awaitable[bool]]  # (execution_id, timeout) -> changed


def _wait(payload: Mapping[str, Any]) -> tuple[float, bool]:
    wait = payload.get("wait", 0)
    until = payload.get("until", "settled")
    if isinstance(wait, bool) or not isinstance(wait, int | float) or not 0 <= wait <= MAX_WAIT_SECONDS:
        raise RpcError(422, f"'wait' must be a number of seconds from 0 to {MAX_WAIT_SECONDS:g}")
    if until not in ("settled", "terminal"):
        raise RpcError(422, "'until' must be 'settled' or 'terminal'")
    return float(wait), until == "terminal"


def observation_methods(
    observer: Callable[[], ExecutionObserver | None], change_wait: ChangeWait | None = None
) -> dict[str, RpcMethod]:
    """The RPC table; ``observer`` is looked up per call because RPC is served before the service starts.

    ``consequence`` with ``wait`` answers as soon as the execution settles (terminal, or WAITING
    unless ``until`` is ``terminal``), re-reading after each commit that touched that execution — never on a timer.
    """

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

    async def consequence(payload: dict[str, Any]) -> Any:
        execution_id = _text(payload, "execution_id")
        wait, until_terminal = _wait(payload)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            try:
                view = ready().consequence(execution_id)
            except UnknownExecution:
                view = None
            remaining = deadline - loop.time()
            if (
                (view is not None and view.is_settled(until_terminal))
                or remaining <= 0
                or change_wait is None
            ):
                if view is None:
                    raise RpcError(404, f"no execution {execution_id!r} is known (yet)")
                return view
            await change_wait(execution_id, remaining)

    return {
        "snapshot": answer(lambda o, p: o.snapshot(_text(p, "execution_id"))),
        "transitions": answer(lambda o, p: o.transitions(_text(p, "execution_id"))),
        "timeline": answer(lambda o, p: o.timeline(_text(p, "session_id"))),
        "consequence": consequence,
        "consequences": answer(lambda o, p: o.consequences(_text(p, "session_id"), _ids(p, "execution_ids"))),
        "topology": answer(lambda o, p: o.topology()),
    }
