"""``execution.proposed`` refuses what no consumer can act on: empty or malformed ids, a malformed tool
name, arguments nested deeper than can be hashed. Built in code it raises; decoded from the bus it is an
:class:`EventDecodeError` (the runtime dead-letters those). Canonical JSON refuses values too deep."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from overseer_events.canonical import MAX_DEPTH, NotCanonical, args_hash, canonical_bytes, nested_deeper_than
from overseer_events.catalogue import ExecutionProposed, Principal
from overseer_events.envelope import decode, new_event
from overseer_events.errors import EventDecodeError

AGENT = Principal(kind="agent", id="agent")


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def proposal(**fields: Any) -> ExecutionProposed:
    return ExecutionProposed(**{"execution_id": "0190-e", "session_id": "s-1", "proposer": AGENT, **fields})


def encoded(**data: Any) -> bytes:
    event = new_event(proposal(), aggregate_id="0190-e", aggregate_version=1, actor="gateway")
    raw = orjson.loads(event.encode())
    raw["data"].update(data)
    return json.dumps(raw).encode()  # json.dumps: orjson refuses to write more than 254 levels


BAD_FIELDS = [
    {"execution_id": ""},
    {"execution_id": "e\x00"},
    {"execution_id": "e\r\n"},
    {"execution_id": " e"},
    {"execution_id": "e" * 129},
    {"session_id": ""},
    {"session_id": "s/1"},
    {"co_id": ""},
    {"depends_on": ""},
    {"idempotency_key": ""},
    {"idempotency_key": "k\x00"},
    {"tool": ""},
    {"tool": "rm -rf /"},
    {"proposer": {"kind": "agent", "id": ""}},
    {"proposer": {"kind": "", "id": "a"}},
    {"args": {"x": nested(MAX_DEPTH)}},
    {"args": {"x": nested(300)}},
    {"action_detail": {"args": nested(MAX_DEPTH)}},
]


@pytest.mark.parametrize("fields", BAD_FIELDS, ids=[repr(f)[:40] for f in BAD_FIELDS])
def test_a_malformed_proposal_cannot_be_built_nor_decoded(fields: dict[str, Any]) -> None:
    name = next(iter(fields))
    with pytest.raises(ValidationError, match=name):
        proposal(**fields)
    with pytest.raises(EventDecodeError, match=f"execution.proposed: .*{name}"):
        decode(encoded(**fields))


def test_well_formed_ids_and_arguments_at_the_depth_limit_are_accepted() -> None:
    args = {"x": nested(MAX_DEPTH - 1)}
    ok = proposal(
        execution_id="0190f1e2-aaaa-7bbb-8ccc-dddddddddddd",
        session_id="s-42:sub.task_1",
        co_id="0190f1e2-co",
        depends_on="e-1",
        idempotency_key="my key: anything printable ✓",
        tool="my-server.tool_1",
        args=args,
    )
    assert decode(encoded(**ok.model_dump(mode="json"))).data == ok
    assert len(args_hash(args)) == 64


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 254, 300, 1023, 5000])
def test_canonical_json_refuses_values_nested_too_deep_instead_of_crashing(depth: int) -> None:
    with pytest.raises(NotCanonical, match=f"more than {MAX_DEPTH} levels deep"):
        canonical_bytes(nested(depth))
    with pytest.raises(NotCanonical, match=f"more than {MAX_DEPTH} levels deep"):
        args_hash({"float first": 1.5, "x": nested(depth)})  # the json.dumps path


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=30,
)


@given(JSON, st.integers(min_value=0, max_value=8))
def test_nested_deeper_than_agrees_with_a_recursive_count(value: Any, limit: int) -> None:
    assert nested_deeper_than(value, limit) is (depth_of(value) > limit)
