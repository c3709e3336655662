"""The model plugin's costs, against a scripted OpenAI-compatible server on a real socket.

    python bench/llm.py [llm_plugin_overhead] [llm_first_token] [--calls N]

* ``llm_plugin_overhead``: what the plugin adds to a model call, against the raw ``openai`` client
  making the same streamed call. Both stream a short answer with usage; the plugin also assembles the
  answer, times it and counts its tokens. They run in alternating blocks (so the machine's drift
  touches both alike); the line reports each side's median and the median added (goal: ≤ 1 ms).
* ``llm_first_token``: how long the model's first piece of text takes from the model server to a
  client following the session on the gateway's WebSocket (the reasoning service streams it over NATS,
  the gateway forwards it), with each service in its own process, as ``overseer up`` runs them, on a
  real nats-server (goal: ≤ 5 ms added at p50).
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

from bench.common import emit, stack_processes  # noqa: E402
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


async def first_token(turns: int) -> dict[str, float]:
    """The scripted server's first piece to the WebSocket client, per turn, with each service in its own
    process (as ``overseer up`` runs them) on a real nats-server."""
    import tempfile
    from urllib.parse import urlencode

    import httpx
    from websockets.asyncio.client import connect

    from tests.fakes.scripted_llm import Text

    answer = Text("Thursday at ten suits Bob; the room is free.")
    added: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        async with scripted_model() as server:
            server.then(*(answer for _ in range(turns + WARM_UP)))
            llm = {"base_url": server.base_url, "api_key": "k", "model": MODEL}
            async with stack_processes(Path(work), llm=llm) as stack:
                token = stack.tokens["operator"]
                headers = {"Authorization": f"Bearer {token}"}
                async with httpx.AsyncClient(base_url=stack.url, headers=headers) as http:
                    for turn in range(turns + WARM_UP):
                        session = f"first-token-{turn}"
                        query = urlencode(
                            {"session": session, "token": token, "subjects": "agent.reply_delta"}
                        )
                        ws_url = stack.url.replace("http", "ws", 1)
                        async with connect(f"{ws_url}/v1/ws?{query}") as ws:
                            before = len(server.first_pieces)
                            await http.post(
                                f"/v1/sessions/{session}/messages", json={"text": "when is Bob free?"}
                            )
                            await asyncio.wait_for(ws.recv(), 30)
                            arrived = time.perf_counter()
                        if turn >= WARM_UP and len(server.first_pieces) > before:
                            added.append((arrived - server.first_pieces[before]) * 1000)
    return {"turns": len(added), "added_p50_ms": round(statistics.median(added), 3)}


WARM_UP = 5


async def main(scenarios: list[str], calls: int) -> None:
    if not scenarios or "llm_plugin_overhead" in scenarios:
        async with scripted_model() as server:
            result = await measure(server, calls)
        emit({"scenario": "llm_plugin_overhead", "calls": calls, **result, "goal_added_p50_ms": 1.0})
    if not scenarios or "llm_first_token" in scenarios:
        emit({"scenario": "llm_first_token", **await first_token(100), "goal_added_p50_ms": 5.0})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", help="llm_plugin_overhead, llm_first_token (default: both)")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.scenarios, args.calls))
