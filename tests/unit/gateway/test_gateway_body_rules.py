"""The gateway's body rules, without a server: the depth of JSON text counted without parsing or
recursing, the limit's bounds, and what arguments can never be run."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from overseer_events.canonical import MAX_DEPTH
from overseer_gateway.domain.actions import args_problem
from overseer_gateway.entrypoints.limits import BodyLimit, json_deeper_than

LIMIT = 32  # gateway.max_json_depth out of the box; the chains below straddle it


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


# Strings full of what could confuse a scanner: brackets, quotes, backslashes.
TRICKY = st.text(alphabet='[]{}"\\ ,:ab\u2028é', max_size=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | TRICKY,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TRICKY, children, max_size=3),
    max_leaves=40,
)


@given(JSON, st.integers(min_value=0, max_value=10), st.booleans())
def test_the_depth_of_json_text_is_counted_as_a_parser_would(value: Any, limit: int, indent: bool) -> None:
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    assert json_deeper_than(text, limit) is (depth_of(value) > limit)


@pytest.mark.parametrize("depth", [1, 31, 32, 33, 100, 1023, 200_000])
def test_a_single_deep_chain_is_measured_exactly(depth: int) -> None:
    text = b"[" * depth + b"]" * depth
    assert json_deeper_than(text, LIMIT) is (depth > LIMIT)


def test_brackets_in_strings_and_escaped_quotes_do_not_count() -> None:
    text = orjson.dumps({"s": '"[[[[\\"{{{{' * 50, "t": ["]]]]" * 50]})
    assert not json_deeper_than(text, 2)
    assert json_deeper_than(text, 1)


@pytest.mark.parametrize("depth", [0, MAX_DEPTH + 1])
def test_the_configured_limit_is_between_1_and_the_events_limit(depth: int) -> None:
    with pytest.raises(ValueError, match=r"gateway\.max_json_depth must be between 1 and 64"):
        BodyLimit(1024, depth)


def test_too_deep_and_malformed_bodies_are_told_apart() -> None:
    limit = BodyLimit(1 << 20, 4)
    assert limit.parse_json(b"[[[[1]]]]")[1] is None
    for body in (b"[[[[[1]]]]]", b"[" * 5000 + b"]" * 5000):
        _, refusal = limit.parse_json(body)
        assert refusal is not None
        assert refusal.status_code == 422
        assert b"more than 4 levels deep" in refusal.body
    _, refusal = limit.parse_json(b"[[[[[1")
    assert refusal is not None
    assert refusal.status_code == 400


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (b'{"n": 123456789012345678901234}', True),
        (b'{"n": [1, -98765432109876543210]}', True),
        (b'{"n": 18446744073709551615}', False),  # the largest 64-bit integer fits
        (b'{"session_id": "d1795793050113795585-300", "n": 1}', False),  # digits inside a string are text
        (b'{"a": "\\"9223372036854775808\\"", "n": 99999999999999999999}', True),  # escapes do not hide one
    ],
)
def test_only_integers_beyond_64_bits_are_refused_not_long_digits_in_strings(
    body: bytes, refused: bool
) -> None:
    document, refusal = BodyLimit(1 << 20, 8).parse_json(body)
    if refused:
        assert refusal is not None
        assert refusal.status_code == 422
        assert b"64 bits" in refusal.body
    else:
        assert refusal is None
        assert document == orjson.loads(body)


@pytest.mark.parametrize(
    ("tool", "args", "problem"),
    [
        ("fs.write", {"path": "a", "content": "x\x00"}, "contains a NUL character"),
        ("fs.list", {"p\x00": "."}, "contains a NUL character"),
        ("fs.list", {"x": [[{"y": "\x00"}]]}, "contains a NUL character"),
        ("email.send", {"to": "b@x.org\r\n"}, "to: 'b@x.org\\r\\n' contains control characters"),
        ("email.send", {"to": ["a@x.org", "b@x.org\x7f"]}, "to: 'b@x.org\\x7f' contains control characters"),
        ("email.send", {"to": "a@x.org", "subject": "\x1b[31m"}, "subject: "),
    ],
)
def test_arguments_that_can_never_run_are_named(tool: str, args: dict[str, Any], problem: str) -> None:
    found = args_problem(tool, args)
    assert found is not None
    assert problem in found


def test_line_breaks_are_fine_outside_mail_headers() -> None:
    assert args_problem("email.send", {"to": "a@x.org", "subject": "Hi", "body": "l1\r\nl2\t"}) is None
    assert args_problem("fs.write", {"path": "a", "content": "l1\r\n\x1b"}) is None


@pytest.mark.parametrize("innermost", [1, [], {}], ids=["a number", "an empty array", "an empty object"])
def test_arguments_deeper_than_the_events_allow_are_named(innermost: Any) -> None:
    value: Any = innermost
    for level in range(MAX_DEPTH - depth_of(innermost) - 1):
        value = [value] if level % 2 else {"k": value}
    assert depth_of({"x": value}) == MAX_DEPTH
    assert args_problem("fs.list", {"x": value}) is None
    assert args_problem("fs.list", {"x": [value]}) == (
        f"arrays and objects nested more than {MAX_DEPTH} levels deep"
    )
