"""UUIDv7 identifiers: time-ordered, so event ids sort by creation time."""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_last_ms = 0
_counter = 0

# The random bits of the ids, read from the system's random source 4 KiB at a time rather than a few
# bytes per id: an id is made for every event, and each read is a system call. A forked child starts
# with none: it must never hand out its parent's bytes again.
_POOL_BYTES = 4096
_pool = b""
_taken = 0


def _random(n: int) -> int:
    """``n`` bytes of the pool as an integer (the caller holds ``_lock``)."""
    global _pool, _taken
    if _taken + n > len(_pool):
        _pool, _taken = os.urandom(_POOL_BYTES), 0
    start, _taken = _taken, _taken + n
    return int.from_bytes(_pool[start:_taken], "big")


def _forget_pool() -> None:
    global _pool, _taken
    _pool, _taken = b"", 0


os.register_at_fork(after_in_child=_forget_pool)


def uuid7() -> str:
    """A RFC 9562 version-7 UUID as a string, monotonic within this process.

    The 12-bit ``rand_a`` field carries a counter when several ids share one
    millisecond, so ids made by one process never sort out of order. Formatted
    by hand: an id is made for every event, and ``uuid.UUID`` costs more than the rest.
    """
    global _last_ms, _counter
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:  # counter exhausted: borrow the next millisecond
                _last_ms += 1
                _counter = 0
            now_ms = _last_ms
        else:
            _last_ms = now_ms
            _counter = _random(2) & 0x3FF
        counter = _counter
        rand_b = _random(8) & ((1 << 62) - 1)
    h = f"{(now_ms & 0xFFFFFFFFFFFF) << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62 | rand_b:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
