"""Canonical JSON and the hashes built on it.

``args_hash`` binds an approval to the exact arguments a human saw: SHA-256 of
the canonical JSON of the arguments (keys sorted, no spaces, non-ASCII kept as
UTF-8, i.e. ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)``).

orjson produces the same bytes, and faster, for every value except floats
written with an exponent (``1e+16`` versus ``1e16``) and integers beyond 64
bits, so floats and huge integers take the standard library path: the
definition stays ``json.dumps``, orjson is only a shortcut where it agrees.

Values nested more than :data:`MAX_DEPTH` arrays and objects deep have no canonical form here:
``json.dumps`` and the walk below recurse (a ``RecursionError`` near 1,000 levels) and orjson stops at
254. :func:`nested_deeper_than` says so without recursing; the event catalogue uses it to refuse such
arguments as malformed, so they never reach a hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import orjson

_SHA256 = hashlib.sha256
_OPTIONS = orjson.OPT_SORT_KEYS
_INT64 = 1 << 63

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects a tool call's arguments may have (``{}`` is 1 deep)."""


class NotCanonical(ValueError):
    """The value has no canonical JSON form (NaN, infinity, a non-JSON type or a non-string key)."""


def nested_deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` has arrays or objects nested more than ``limit`` deep (a scalar is 0 deep,
    ``{}`` 1, ``{"a": [1]}`` 2). Level by level, without recursion, so any depth is safe to ask about."""
    level = [value]
    depth = 0
    while True:
        below: list[Any] = []
        found = False
        for item in level:
            if isinstance(item, dict):
                below.extend(item.values())
            elif isinstance(item, list | tuple):
                below.extend(item)
            else:
                continue
            found = True
        if not found:
            return False
        depth += 1  # a container at this level: the value is at least this deep
        if depth > limit:
            return True
        level = below


def _needs_stdlib(value: Any, depth: int = 1) -> bool:
    """Whether ``value`` holds something orjson would write differently from ``json.dumps``.

    Raises :class:`NotCanonical` when it has to look deeper than :data:`MAX_DEPTH` levels; when it
    answers False it has seen every container, so the depth is checked.
    """
    kind = type(value)
    if kind is dict:
        return _mapping_needs_stdlib(value, depth)
    if kind is str or kind is bool or value is None:
        return False
    if kind is list or kind is tuple:
        if depth > MAX_DEPTH:
            raise _too_deep()
        return any(_needs_stdlib(v, depth + 1) for v in value)
    if kind is int:
        return not -_INT64 <= value < _INT64
    return True  # floats, subclasses and foreign types: let json.dumps decide


def _mapping_needs_stdlib(value: dict[Any, Any], depth: int) -> bool:
    """:func:`_needs_stdlib` of a dict: the common case, a flat mapping of strings, without a generator."""
    if depth > MAX_DEPTH:
        raise _too_deep()
    for key, item in value.items():
        if type(key) is not str:
            return True
        item_kind = type(item)
        if item_kind is str or item_kind is bool or item is None:
            continue
        if _needs_stdlib(item, depth + 1):
            return True
    return False


def _too_deep() -> NotCanonical:
    return NotCanonical(f"arrays and objects nested more than {MAX_DEPTH} levels deep")


def canonical_bytes(value: Any) -> bytes:
    """The canonical JSON of ``value`` as UTF-8 bytes; raises :class:`NotCanonical` when there is none
    (including for values nested more than :data:`MAX_DEPTH` levels deep)."""
    if not _needs_stdlib(value):
        return orjson.dumps(value, option=_OPTIONS)
    # _needs_stdlib stopped at the first value orjson would write differently: the rest is unseen.
    if nested_deeper_than(value):
        raise _too_deep()
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise NotCanonical(str(exc)) from exc
    return text.encode("utf-8")


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def sha256_hex(data: bytes) -> str:
    return _SHA256(data).hexdigest()


def args_hash(args: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of a tool call's arguments."""
    return _SHA256(canonical_bytes(args if type(args) is dict else dict(args))).hexdigest()
