"""`llm_plugin_overhead`: what the agent's model plugin adds to a model call, against the raw ``openai``
client making the same streamed call to the same scripted OpenAI-compatible server on a real socket.

    python bench/llm.py [--calls N]

Both sides stream a short answer with usage; the plugin also assembles the answer, times it and
counts its tokens. They run in alternating blocks (so the machine's drift touches both alike), and
the line reports each side's median and the median added per call (goal: at most 1 ms at p50).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openai import AsyncOpenAI  # noqa: E402

from bench.common import emit  # noqa: E402
from overseer_reasoning.adapters.llm import OpenAICompatibleModel  # noqa: E402
from tests.fakes.scripted_llm import MODEL, ScriptedModel, scripted_model  # noqa: E402

MESSAGES = [{"role": "user", "content": "When does Bob have time?"}]
BLOCK = 25


async def raw_call(client: AsyncOpenAI) -> float:
    started = time.perf_counter()
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "When does Bob have time?"}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    async for _ in stream:
        pass
    return time.perf_counter() - started


async def plugin_call(model: OpenAICompatibleModel) -> float:
    started = time.perf_counter()
    await model.complete(MESSAGES, ())
    return time.perf_counter() - started


async def measure(server: ScriptedModel, calls: int) -> dict[str, float]:
    raw = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    plugin = OpenAICompatibleModel(
        base_url=server.base_url, api_key="k", model=MODEL, timeout_seconds=30.0, deadline_seconds=60.0,
        max_retries=0, temperature=0.0,
    )  # fmt: skip
    for _ in range(20):  # warm-up: connections, imports, the server's first answers
        await raw_call(raw)
        await plugin_call(plugin)
    raw_times: list[float] = []
    plugin_times: list[float] = []
    while len(raw_times) < calls:
        for _ in range(BLOCK):
            raw_times.append(await raw_call(raw))
        for _ in range(BLOCK):
            plugin_times.append(await plugin_call(plugin))
    raw_p50 = statistics.median(raw_times) * 1000
    plugin_p50 = statistics.median(plugin_times) * 1000
    return {
        "raw_p50_ms": round(raw_p50, 3),
        "plugin_p50_ms": round(plugin_p50, 3),
        "added_p50_ms": round(plugin_p50 - raw_p50, 3),
    }


async def main(calls: int) -> None:
    async with scripted_model() as server:
        result = await measure(server, calls)
    emit({"scenario": "llm_plugin_overhead", "calls": calls, **result, "goal_added_p50_ms": 1.0})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", help="llm_plugin_overhead (the only one)")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.calls))
