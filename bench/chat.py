"""Benchmark ``chat_turn``: a message to Overseer's own agent, to its reply after one tool call.

A real stack (``bench/pipeline.py``'s :class:`LocalStack`: an embedded nats-server and the six services,
each its own process with its own SQLite file), the agent planning with its embedded offline planner.
A person says "list the files": the agent normalises the message, recalls, plans ``fs.list``
``{"path": "."}`` (AUTO), proposes it to the firewall, the executor runs it, the observer's outcome
comes back, the agent replies from it and consolidates. One turn is measured from
``POST /v1/sessions/{session}/messages`` to the ``conversation.replied`` event whose ``in_reply_to`` is
that message's id; the reply must be the one made from the listing ("Here is what . holds").

How the reply is seen: one WebSocket (``/v1/ws?subjects=conversation.replied``, opened before the run)
for all clients, its frames matched to waiting turns by ``in_reply_to``. The reply is pushed the moment
the reasoning service records it, so the latency is the agent's, not a polling interval's; and it costs
the agent nothing, where polling ``GET /v1/sessions/{id}`` would be a ``session.get`` RPC answered by the
reasoning process itself, charged to the very CPU this benchmark reports. One socket rather than one per
session keeps the gateway's fan-out work (decoding every reply once per feed) out of the measurement.

Each concurrent client has its own session and sends its turns one after the other, each after the
previous reply; a conversation is :data:`TURNS_PER_SESSION` turns long, then the client starts a new
session (the same on the LangGraph side: long conversations would measure history growth, not a turn).
Such a client lists the same directory over and over on purpose, which the firewall would rightly
hold as a stuck agent after three times (its loop layer: the same call again; its breaker: the same
result again); the benchmark raises those thresholds through the admin policy
(``PUT /v1/policy/admin``), as an administrator would. Every layer still runs on every call.

Runs at concurrency 1 and ``--concurrency`` (default 16), one JSON line each:
``{"scenario":"chat_turn","turns":N,"concurrency":C,"turns_per_s":…,"p50_ms":…,"p99_ms":…,
"reasoning_cpu_ms_per_turn":…}``; the last is the reasoning process's CPU time (user + system, from
``/proc/<pid>/stat``) over the measured run divided by its turns. Then the LangGraph peer
(``bench/peers/langgraph_chat.py``) and one ratio line per concurrency. Where the CPU of the whole
stack went goes to stderr.

    python bench/chat.py [chat_turn] [--concurrency C] [--no-peers] [--quick] [--keep] [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_per_action, emit, event_loop_runner, percentile  # noqa: E402
from bench.lean_http import LeanClient  # noqa: E402
from bench.pipeline import LocalStack, client, lean_client  # noqa: E402

SCENARIO = "chat_turn"
MESSAGE = "list the files"
REPLY_PREFIX = "Here is what . holds"  # the embedded planner's reply after a listing that succeeded
TURNS_PER_SESSION = 10  # one conversation's length, as in bench/peers/langgraph_chat.py
COUNTS = (100, 800)  # turns at concurrency 1, at the high concurrency
TURN_TIMEOUT = 30.0


def note(text: str) -> None:
    print(f"[chat] {text}", file=sys.stderr, flush=True)


class ChatUnavailable(RuntimeError):
    """The gateway has no chat route (404): the scenario is skipped, not failed."""


class Replies:
    """The one WebSocket on ``conversation.replied``: each reply's arrival time, by the message it answers."""

    def __init__(self, stack: LocalStack) -> None:
        self.url = stack.url.replace("http://", "ws://") + "/v1/ws?subjects=conversation.replied"
        self.token = stack.tokens["viewer"]
        self.waiting: dict[str, asyncio.Future[tuple[float, str]]] = {}
        self.early: dict[str, tuple[float, str]] = {}  # replies seen before their POST answered
        self.reader: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from websockets.asyncio.client import connect

        ready = asyncio.Event()

        async def read() -> None:
            headers = {"Authorization": f"Bearer {self.token}"}
            async with connect(self.url, additional_headers=headers, max_size=None) as ws:
                ready.set()
                async for raw in ws:
                    arrived = time.perf_counter()
                    data = orjson.loads(raw)["event"]["data"]
                    answered, text = data.get("in_reply_to"), data.get("text", "")
                    if not isinstance(answered, str):
                        continue
                    future = self.waiting.pop(answered, None)
                    if future is None:
                        self.early[answered] = (arrived, text)
                    elif not future.done():
                        future.set_result((arrived, text))

        self.reader = asyncio.create_task(read())
        ready_wait = asyncio.create_task(ready.wait())
        await asyncio.wait({ready_wait, self.reader}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            ready_wait.cancel()
            if self.reader.done():
                self.reader.result()  # the connection's error
            raise TimeoutError("the WebSocket did not open")

    async def reply_to(self, message_id: str) -> tuple[float, str]:
        """(when the reply arrived, its text)."""
        if message_id in self.early:
            return self.early.pop(message_id)
        future: asyncio.Future[tuple[float, str]] = asyncio.get_running_loop().create_future()
        self.waiting[message_id] = future
        try:
            return await asyncio.wait_for(future, TURN_TIMEOUT)
        finally:
            self.waiting.pop(message_id, None)

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(BaseException):
                await self.reader


async def turn(operator: LeanClient, replies: Replies, viewer: LeanClient, session_id: str) -> float:
    """One message, to the agent's reply after the tool's result; its latency in seconds."""
    started = time.perf_counter()
    response = await operator.post(f"/v1/sessions/{session_id}/messages", json={"text": MESSAGE})
    if response.status_code == 404:
        raise ChatUnavailable(f"POST /v1/sessions/…/messages answered 404: {response.text[:200]}")
    if response.status_code != 202:
        raise RuntimeError(f"the message was refused ({response.status_code}): {response.text[:300]}")
    message_id = response.json()["message_id"]
    try:
        arrived, text = await replies.reply_to(message_id)
    except TimeoutError:
        view = (await viewer.get(f"/v1/sessions/{session_id}")).json()
        raise RuntimeError(
            f"no reply to {message_id} in {TURN_TIMEOUT:g}s; the session: status={view.get('status')} "
            f"approval={view.get('approval')} hitl={view.get('hitl_request')}"
        ) from None
    if not text.startswith(REPLY_PREFIX):
        raise RuntimeError(f"the reply is not the listing's: {text[:300]!r}")
    return arrived - started


async def conversations(
    stack: LocalStack, replies: Replies, count: int, concurrency: int, run_id: str
) -> tuple[list[float], float]:
    """``count`` turns by ``concurrency`` clients, each its own sessions' turns one after the other."""
    operator = lean_client(stack, "operator", concurrency)
    viewer = lean_client(stack, "viewer", 1)
    latencies: list[float] = []
    tickets = iter(range(count))

    async def one_client(k: int) -> None:
        for done, _ in enumerate(tickets):
            session_id = f"{run_id}-w{k}-s{done // TURNS_PER_SESSION}"
            latencies.append(await turn(operator, replies, viewer, session_id))

    started = time.perf_counter()
    try:
        await asyncio.gather(*(one_client(k) for k in range(concurrency)))
    finally:
        await operator.aclose()
        await viewer.aclose()
    return latencies, time.perf_counter() - started


async def check_one_turn(stack: LocalStack, session_id: str) -> None:
    """What a turn left in a session: done, the tool's result in the dialogue, the reply after it."""
    async with client(stack, "viewer", 1) as viewer:
        view = (await viewer.get(f"/v1/sessions/{session_id}")).json()
    history = view.get("history") or []
    roles = [m.get("role") for m in history]
    if view.get("status") != "done" or roles[-2:] != ["tool", "assistant"]:
        raise RuntimeError(f"the turn did not end with a reply after the tool: {view}")


async def allow_repeated_calls(stack: LocalStack) -> None:
    """The admin layer through the API: a client listing "." ten times in a row is not a stuck agent here."""
    unlimited = 1_000_000
    async with client(stack, "admin", 1) as admin:
        policy = (await admin.get("/v1/policy")).json()
        layer = {k: v for k, v in policy["admin"].items() if k != "version"}
        layer["loops"] = {**layer.get("loops", {}), "same_args": unlimited, "same_tool": unlimited}
        layer["breaker"] = {**layer.get("breaker", {}), "stagnation": unlimited}
        response = await admin.put("/v1/policy/admin", json=layer)
        response.raise_for_status()


async def measure(stack: LocalStack, replies: Replies, count: int, concurrency: int) -> dict[str, Any]:
    run_id = f"chat-c{concurrency}-{time.time_ns() % 10**9}"
    await conversations(stack, replies, max(20, concurrency * 4), concurrency, f"{run_id}-warmup")
    before = stack.cpu_seconds()
    latencies, elapsed = await conversations(stack, replies, count, concurrency, run_id)
    after = stack.cpu_seconds()
    await check_one_turn(stack, f"{run_id}-w0-s0")
    note(f"c={concurrency}: {cpu_per_action(before, after, count, elapsed)}")
    reasoning_cpu = after.get("reasoning", 0.0) - before.get("reasoning", 0.0)
    return {
        "scenario": SCENARIO,
        "turns": count,
        "concurrency": concurrency,
        "turns_per_s": round(count / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "reasoning_cpu_ms_per_turn": round(reasoning_cpu * 1000 / count, 2),
    }


async def run_overseer(
    concurrency: int, quick: bool, profile: Path | None, keep: bool
) -> list[dict[str, Any]]:
    home = Path(tempfile.mkdtemp(prefix="overseer-chat-bench-"))
    stack = LocalStack(home, profile)
    results: list[dict[str, Any]] = []
    replies: Replies | None = None
    low, high = COUNTS
    if quick:
        low, high = low // 5, high // 5
    try:
        await stack.start()
        await stack.wait_healthy()
        note(f"stack up under {home}")
        await allow_repeated_calls(stack)
        replies = Replies(stack)
        await replies.start()
        for c, n in ((1, low), (concurrency, high)):
            result = await measure(stack, replies, n, c)
            emit(result)
            results.append(result)
    finally:
        if replies is not None:
            await replies.close()
        stack.stop()
        if profile is None and not keep:
            shutil.rmtree(home, ignore_errors=True)
        else:
            note(f"stack home kept at {home}" + (f"; profiles in {profile}" if profile else ""))
    return results


def ratios(ours: list[dict[str, Any]], peers: list[dict[str, Any]]) -> None:
    for result in ours:
        peer = next((p for p in peers if p["concurrency"] == result["concurrency"]), None)
        if peer is None:
            continue
        emit(
            {
                "scenario": f"ratio_{SCENARIO}_vs_langgraph",
                "concurrency": result["concurrency"],
                "overseer_turns_per_s": result["turns_per_s"],
                "langgraph_turns_per_s": peer["turns_per_s"],
                "ratio": round(result["turns_per_s"] / peer["turns_per_s"], 2),
                "overseer_p50_ms": result["p50_ms"],
                "langgraph_p50_ms": peer["p50_ms"],
            }
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenarios", nargs="*", choices=[[], SCENARIO], default=[])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-peers", action="store_true", help="skip the LangGraph peer benchmark")
    parser.add_argument("--quick", action="store_true", help="a fifth of the turns (smoke run)")
    parser.add_argument("--profile", type=Path, help="run every service under pyinstrument; reports here")
    parser.add_argument("--keep", action="store_true", help="keep the stack's home (stores, logs) afterwards")
    args = parser.parse_args(argv)
    runner = event_loop_runner()
    try:
        ours = runner(run_overseer(args.concurrency, args.quick, args.profile, args.keep))
    except ChatUnavailable as exc:
        note(f"skipped: the gateway serves no chat endpoint ({exc})")
        emit({"scenario": SCENARIO, "skipped": "the gateway serves no chat endpoint (404)"})
        return 0
    if not args.no_peers:
        from bench.peers.langgraph_chat import run_peers

        peers = run_peers(args.concurrency, args.quick)
        for line in peers:
            emit(line)
        ratios(ours, peers)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
