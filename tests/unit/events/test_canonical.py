"""args_hash: SHA-256 of the canonical JSON (sorted keys, no spaces, non-ASCII kept)."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from overseer_events.canonical import NotCanonical, args_hash, canonical_json

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def reference(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@given(st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=6))
def test_canonical_json_is_json_dumps_with_sorted_keys_and_no_spaces(args: dict[str, object]) -> None:
    assert canonical_json(args) == reference(args)
    assert args_hash(args) == hashlib.sha256(reference(args).encode("utf-8")).hexdigest()


def test_key_order_does_not_change_the_hash() -> None:
    assert args_hash({"b": 1, "a": [1, {"y": 2, "x": 1}]}) == args_hash({"a": [1, {"x": 1, "y": 2}], "b": 1})


def test_non_ascii_is_kept_as_utf8_not_escaped() -> None:
    assert canonical_json({"subject": "会议邀请"}) == '{"subject":"会议邀请"}'


def test_floats_with_exponents_follow_json_dumps() -> None:
    assert canonical_json({"x": 1e16, "y": 1e-7}) == '{"x":1e+16,"y":1e-07}'


def test_a_value_without_canonical_json_is_refused() -> None:
    with pytest.raises(NotCanonical):
        args_hash({"x": math.nan})
    with pytest.raises(NotCanonical):
        args_hash({"x": object()})
