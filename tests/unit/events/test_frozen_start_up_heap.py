"""A service process keeps the cyclic collector off what its start-up built, and still collects what it
makes afterwards."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import gc, json, weakref
from overseer_runtime.main import YOUNG_GENERATION_THRESHOLD, freeze_start_up_heap

freeze_start_up_heap()
frozen = gc.get_freeze_count()

class Node:
    pass

a, b = Node(), Node()
a.other, b.other = b, a  # a cycle made after start-up: only the collector frees it
alive = weakref.ref(a)
del a, b
gc.collect()
print(json.dumps({
    "frozen": frozen,
    "threshold": gc.get_threshold()[0],
    "expected_threshold": YOUNG_GENERATION_THRESHOLD,
    "cycle_collected": alive() is None,
}))
"""


def settled() -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_start_up_objects_are_frozen_and_the_young_generation_is_collected_less_often() -> None:
    result = settled()
    assert isinstance(result["frozen"], int)
    assert result["frozen"] > 1_000  # the modules, the validators …
    assert result["threshold"] == result["expected_threshold"]
    assert isinstance(result["threshold"], int)
    assert result["threshold"] > 700  # Python's default


def test_garbage_made_after_start_up_is_still_collected() -> None:
    assert settled()["cycle_collected"] is True
