"""RPC requests are validated against their method's pydantic model before the method runs, and the
server's answers keep their wire shape: ``{"ok": true, "result": …}`` or ``{"ok": false, "status", "detail"}``."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from overseer_events.subjects import Subjects
from overseer_runtime.rpc import RpcError, RpcRequest, RpcServer, RpcTable


class Greet(RpcRequest):
    name: str
    times: int


async def greet(request: Greet) -> str:
    return " ".join([request.name] * request.times)


def pydantic_says(payload: dict[str, Any]) -> str:
    """What pydantic itself reports for the first problem of ``payload`` as a :class:`Greet`."""
    with pytest.raises(ValidationError) as invalid:
        Greet.model_validate(payload)
    return str(invalid.value.errors()[0]["msg"])


async def test_a_valid_request_reaches_its_method_as_the_model() -> None:
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]

    assert await call({"name": "ada", "times": 2}) == "ada ada"


async def test_a_request_of_the_wrong_type_is_refused_with_422_and_pydantic_s_message() -> None:
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]
    payload = {"name": "ada", "times": "often"}

    with pytest.raises(RpcError) as refused:
        await call(payload)

    assert refused.value.status == 422
    assert refused.value.detail == f"times: {pydantic_says(payload)}"


async def test_a_request_with_a_key_the_method_does_not_know_is_refused_with_422() -> None:
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]
    payload = {"name": "ada", "times": 1, "loudly": True}

    with pytest.raises(RpcError) as refused:
        await call(payload)

    assert refused.value.status == 422
    assert refused.value.detail == f"loudly: {pydantic_says(payload)}"


async def test_a_method_is_not_run_when_its_request_is_refused() -> None:
    ran: list[Greet] = []

    async def record(request: Greet) -> None:
        ran.append(request)

    call = RpcTable().method("greet", Greet, record).methods()["greet"]
    with pytest.raises(RpcError):
        await call({"name": "ada"})

    assert ran == []


def test_a_method_declared_twice_is_refused() -> None:
    table = RpcTable().method("greet", Greet, greet)

    with pytest.raises(ValueError, match="'greet' is declared twice"):
        table.method("greet", Greet, greet)


# ---------------------------------------------------------------------------------- the server --


def server() -> RpcServer:
    def spawn(coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        return asyncio.get_running_loop().create_task(coro)

    return RpcServer("observer", Subjects(), spawn)


async def test_until_the_service_has_started_every_method_is_answered_503_starting() -> None:
    gate = server()
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]

    answer = orjson.loads(await gate.answer(call, b'{"name": "ada", "times": 1}'))

    assert answer == {"ok": False, "status": 503, "detail": "observer is starting"}


async def test_health_is_answered_while_the_service_is_starting() -> None:
    gate = server()

    async def health(payload: dict[str, Any]) -> dict[str, Any]:
        return {"ready": False}

    answer = orjson.loads(await gate.answer(health, b"{}", gated=False))

    assert answer == {"ok": True, "result": {"ready": False}}


async def test_once_open_a_method_answers_its_result_and_a_refusal_its_status() -> None:
    gate = server()
    gate.open = True
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]

    assert orjson.loads(await gate.answer(call, b'{"name": "ada", "times": 1}')) == {
        "ok": True,
        "result": "ada",
    }
    refused = orjson.loads(await gate.answer(call, b'{"name": "ada"}'))
    assert (refused["ok"], refused["status"]) == (False, 422)
    assert refused["detail"] == f"times: {pydantic_says({'name': 'ada'})}"


async def test_a_request_that_is_not_a_json_object_is_refused_with_422() -> None:
    gate = server()
    gate.open = True
    call = RpcTable().method("greet", Greet, greet).methods()["greet"]

    assert orjson.loads(await gate.answer(call, b"not json"))["status"] == 422
    assert orjson.loads(await gate.answer(call, b"[1, 2]"))["status"] == 422
