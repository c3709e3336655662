"""Envelope encoding, tolerant decoding, unknown types and the v1 → v2 upcaster."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned, MessageReceived, Principal
from overseer_events.envelope import decode, new_event, registered_types
from overseer_events.errors import EventDecodeError, UnknownEventType
from overseer_events.subjects import OWNERSHIP, owners_of


def _message() -> bytes:
    event = new_event(
        MessageReceived(session_id="s-1", text="hello"),
        aggregate_id="session:s-1",
        aggregate_version=1,
        actor="gateway:test",
        correlation_id="s-1",
    )
    return event.encode()


def test_an_event_survives_encode_and_decode() -> None:
    raw = _message()
    event = decode(raw)
    assert isinstance(event.data, MessageReceived)
    assert event.data.text == "hello"
    assert event.encode() == raw


def test_unknown_fields_are_tolerated() -> None:
    obj = orjson.loads(_message())
    obj["future_envelope_field"] = 1
    obj["data"]["future_data_field"] = {"x": 1}
    event = decode(orjson.dumps(obj))
    assert isinstance(event.data, MessageReceived)
    assert event.data.text == "hello"


def test_an_unknown_type_is_reported_not_crashed_on() -> None:
    obj = orjson.loads(_message())
    obj["type"] = "nobody.knows"
    with pytest.raises(UnknownEventType) as info:
        decode(orjson.dumps(obj))
    assert info.value.event_type == "nobody.knows"


@pytest.mark.parametrize(
    "mutation",
    [
        lambda o: o.pop("event_id"),
        lambda o: o["data"].pop("session_id"),
        lambda o: o.update(data="not an object"),
        lambda o: o.update(schema_version=99),
    ],
)
def test_invalid_events_raise_a_decode_error_with_a_reason(
    mutation: Callable[[dict[str, Any]], object],
) -> None:
    obj = orjson.loads(_message())
    mutation(obj)
    with pytest.raises(EventDecodeError):
        decode(orjson.dumps(obj))


def test_garbage_is_a_decode_error() -> None:
    with pytest.raises(EventDecodeError, match="not JSON"):
        decode(b"\x00{nope")


def test_a_version_1_message_is_upcast_to_version_2() -> None:
    obj = orjson.loads(_message())
    obj["schema_version"] = 1
    obj["data"] = {"session_id": "s-1", "message": "from the old days"}
    event = decode(orjson.dumps(obj))
    assert event.schema_version == 2
    assert event.data == MessageReceived(session_id="s-1", text="from the old days", channel="rest")


def test_events_are_immutable() -> None:
    event = decode(_message())
    assert isinstance(event.data, MessageReceived)
    with pytest.raises(Exception, match="frozen"):
        event.data.text = "changed"  # type: ignore[misc]  # the write mypy refuses must fail at run time too


def test_every_catalogued_type_has_an_owner() -> None:
    for event_type in registered_types():
        assert owners_of(event_type), f"{event_type} has no owner in {sorted(OWNERSHIP)}"


def test_a_move_stored_with_the_trace_step_it_once_carried_decodes_to_the_same_step() -> None:
    move = ExecutionTransitioned(
        execution_id="exec-001",
        session_id="s-1",
        from_status="running",
        to_status="completed",
        trigger="succeed",
        actor="tool_node",
        timestamp=2.0,
        result="sent",
        irreversible=True,
    )
    sent = orjson.loads(
        new_event(move, aggregate_id="exec-001", aggregate_version=3, actor="executor").encode()
    )
    assert "trace" not in sent["data"]
    sent["data"]["trace"] = move.step().model_dump()  # a body that carries the step as a field of its own
    stored = decode(orjson.dumps(sent)).data
    assert isinstance(stored, ExecutionTransitioned)
    assert stored == move
    assert stored.step() == move.step()
    assert (stored.step().action, stored.step().result) == ("transition:exec-001:running→completed", "sent")


def test_a_contracts_end_once_asked_is_the_same_and_changes_neither_its_body_nor_its_equality() -> None:
    start, end = (
        ExecutionTransitioned(
            execution_id="exec-1",
            session_id="s",
            from_status=before,
            to_status=after,
            trigger=trigger,
            actor="tool_node",
            timestamp=at,
        )
        for before, after, trigger, at in (
            ("pending", "running", "start", 1.0),
            ("running", "completed", "succeed", 2.0),
        )
    )
    created = ContractCreated(
        execution_id="exec-1",
        session_id="s",
        action_type="tool_call",
        action_detail={},
        tool="fs.list",
        proposer=Principal(kind="agent", id="agent"),
        created_at=1.0,
        transitions=[start, end],
    )
    body, fields = created.model_dump_json(), created.model_dump()
    assert created.ended == end
    assert created.ended is created.ended  # worked out once
    assert (created.model_dump_json(), created.model_dump()) == (body, fields)
    assert ContractCreated.model_validate_json(body) == created
    assert created.model_copy(update={"transitions": [start]}).ended is None  # a copy asks its own moves
    assert created.model_copy().ended == end
