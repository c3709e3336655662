"""What every benchmark script shares: JSON lines out, latency summaries, a concurrent driver, CPU counters."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


def emit(line: dict[str, Any]) -> None:
    """One result: a JSON object on its own line of stdout (the contract of ``make bench``)."""
    print(json.dumps(line), flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def latency_summary(latencies: list[float], elapsed: float) -> dict[str, Any]:
    """``actions``, ``actions_per_s``, ``p50_ms`` and ``p99_ms`` of one measured run."""
    return {
        "actions": len(latencies),
        "actions_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
    }


def ops_summary(latencies: list[float]) -> dict[str, float]:
    """``ops_per_s``, ``p50_us`` and ``p99_us`` of operations timed one by one (seconds each): the
    operations over the time spent in them, as an in-process benchmark and its peer both count."""
    ordered = sorted(latencies)
    return {
        "ops_per_s": round(len(ordered) / sum(ordered), 1),
        "p50_us": round(ordered[len(ordered) // 2] * 1e6, 2),
        "p99_us": round(ordered[int(len(ordered) * 0.99)] * 1e6, 2),
    }


async def drive(
    count: int, concurrency: int, one: Callable[[int], Awaitable[float]]
) -> tuple[list[float], float]:
    """Run ``count`` actions with ``concurrency`` workers; returns per-action latencies and the wall time."""
    latencies: list[float] = []
    next_index = iter(range(count))

    async def worker() -> None:
        for i in next_index:
            latencies.append(await one(i))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - started


def cpu_seconds(pids: dict[str, int]) -> dict[str, float]:
    """CPU time (user + system) used so far by each process (Linux /proc), and by this one."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for name, pid in pids.items():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = (int(fields[11]) + int(fields[12])) / ticks
    out["bench-client"] = time.process_time()
    return out


def cpu_time(pid: int) -> float:
    """Seconds the process's live threads have run on a CPU (``/proc/<pid>/task/*/schedstat``), to the
    nanosecond: for a short span of one process, such as a second of idling, where :func:`cpu_seconds`'s
    ticks of 10 ms are too coarse (which, unlike this, also count the threads that have ended)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that just ended
            continue
    return total / 1e9


def cpu_per_action(before: dict[str, float], after: dict[str, float], count: int, elapsed: float) -> str:
    """Where the CPU went between two :func:`cpu_seconds` readings, in ms per action, busiest first."""
    spent = {name: (after[name] - before.get(name, 0.0)) * 1000 / count for name in after}
    return (
        "CPU ms per action: "
        + ", ".join(f"{name} {ms:.2f}" for name, ms in sorted(spent.items(), key=lambda kv: -kv[1]))
        + f"; total {sum(spent.values()):.2f} over {elapsed * 1000 / count:.2f} ms of wall time"
    )


class LoopRunner(Protocol):
    """``asyncio.run``'s shape: runs a coroutine on a fresh event loop and returns its result."""

    def __call__(self, main: Coroutine[Any, Any, T], /) -> T: ...


def event_loop_runner() -> LoopRunner:
    """uvloop's ``run`` where it is installed (as the services use), else asyncio's."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:  # pragma: no cover
        return asyncio.run


@dataclass(frozen=True)
class StackProcesses:
    """A stack whose services each run in their own process (as ``overseer up`` runs them)."""

    url: str
    tokens: dict[str, str]


@asynccontextmanager
async def stack_processes(work: Path, **overrides: dict[str, Any]) -> AsyncIterator[StackProcesses]:
    """Every service as a process of its own on a nats-server of its own, under ``work``; ``overrides``:
    configuration sections, as the environment hands them to the processes."""
    from overseer_runtime.launcher import free_port
    from overseer_runtime.testing import Stack, start_nats_under_test
    from tests.support.services import START_ORDER

    nats = start_nats_under_test(work / "nats")
    processes: list[subprocess.Popen[bytes]] = []
    try:
        port = free_port()
        gateway = {**overrides.get("gateway", {}), "port": port}
        stack = Stack(home=work / "home", nats=nats, overrides={**overrides, "gateway": gateway})
        for name in START_ORDER:
            processes.append(stack.spawn(name))
            await stack.wait_ready(name, timeout=60)
        tokens = json.loads((stack.home / "tokens.json").read_text())
        yield StackProcesses(f"http://127.0.0.1:{port}", tokens)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
        nats.stop()
