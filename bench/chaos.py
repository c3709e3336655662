"""Recovery figures: each service, and one node of the NATS cluster, killed in turn during a mixed run.

    python bench/chaos.py [chaos]

``overseer up --cluster 3`` runs the stack (six services, an SMTP sink, three nats-servers with every
stream replicated on each). For each part in turn, four agents propose actions (``email.send``,
irreversible, and ``fs.write``, both AUTO) and wait for each outcome; two seconds in, the part is
killed (SIGKILL) and the supervisor starts it again; two seconds after the stack is healthy again the
load stops and every accepted action is accounted for. One line per part killed:
``{"scenario":"chaos","killed":…,"actions_accepted":…,"actions_lost":0,"effects_duplicated":0,
"reconciliations":…,"seconds_to_healthy":…}`` — lost and duplicated must be 0; a reconciliation is an
irreversible call cut off mid-run whose outcome a person is asked for (never guessed, never re-run).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import emit  # noqa: E402
from overseer_runtime.launcher import free_port  # noqa: E402
from tests.support.chaos import (  # noqa: E402
    SERVICES,
    MixedLoad,
    UpStack,
    account,
    allow_without_a_person,
    node_config,
    pid_of,
)

NODE = "nats-node-1"


def target_of(stack: UpStack, part: str) -> str:
    """What identifies ``part``'s process in its command line."""
    return node_config(stack.home, 1) if part == NODE else f"overseer_{part}"


async def back(stack: UpStack, part: str, killed: int, started: float) -> float:
    """Seconds from the kill until the part runs again (a new process) and the stack is healthy."""
    target = target_of(stack, part)
    while pid_of(stack.home, target) in (0, killed):
        if time.monotonic() - started > 120:
            raise TimeoutError(f"{part} was not started again")
        await asyncio.sleep(0.05)
    await stack.healthy()
    return time.monotonic() - started


async def one_kill(stack: UpStack, part: str) -> dict[str, Any]:
    load = MixedLoad(stack, f"chaos-{part}-{time.time_ns() % 10**6}")
    stop = asyncio.Event()
    running = asyncio.create_task(load.run(stop))
    await asyncio.sleep(2.0)
    killed = pid_of(stack.home, target_of(stack, part))
    started = time.monotonic()
    os.kill(killed, signal.SIGKILL)
    recovered = await back(stack, part, killed, started)
    await asyncio.sleep(2.0)
    stop.set()
    await running
    counted = await account(load)
    return {
        "scenario": "chaos",
        "killed": part,
        **counted.as_dict(),
        "seconds_to_healthy": round(recovered, 2),
    }


async def measure() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as work:
        stack = UpStack(Path(work) / "home", free_port(), cluster=3).start()
        try:
            await stack.healthy()
            await allow_without_a_person(stack)
            return [await one_kill(stack, part) for part in (*SERVICES, NODE)]
        finally:
            stack.stop()


async def main(scenarios: list[str]) -> None:
    if not scenarios or "chaos" in scenarios:
        for line in await measure():
            emit(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*")
    asyncio.run(main(parser.parse_args().scenarios))
