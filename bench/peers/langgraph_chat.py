"""The peer benchmark: ``chat_turn`` built the LangGraph way.

The same conversation as ``bench/chat.py``: a person says "list the files", the agent calls a tool that
lists a real directory and replies with what it found. Written as a LangGraph user would: the prebuilt
ReAct agent (``create_react_agent``) over a scripted chat model (no network, no tokens: it asks for
``fs_list`` on the person's message and answers once the tool's message is back, as the embedded
planner does on the Overseer side), checkpointed durably by ``SqliteSaver`` on a file (WAL,
``synchronous=NORMAL``, as Overseer's stores). One ``thread_id`` per session; each client keeps its
session for :data:`TURNS_PER_SESSION` turns, one after the other, then starts a new one. Everything
runs in one process; concurrency is threads sharing the saver.

``reasoning_cpu_ms_per_turn`` is this process's CPU time over the measured run divided by the turns:
the agent, its checkpoints and its tool all live here (the driver's share is a loop and a list).

Prints ``{"scenario":"peer_langgraph_chat_turn","turns":N,"concurrency":C,"turns_per_s":…,"p50_ms":…,
"p99_ms":…,"reasoning_cpu_ms_per_turn":…}``.

    python bench/peers/langgraph_chat.py [--concurrency C] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent

MESSAGE = "list the files"
TURNS_PER_SESSION = 10  # one conversation's length, the same on both sides (bench/chat.py)
COUNTS = (100, 800)  # turns at concurrency 1, at the high concurrency


class ScriptedChatModel(BaseChatModel):
    """A chat model that decides as the embedded planner does: ``fs_list`` for the person's request,
    then a reply from the tool's result. Deterministic and free, so the graph is what is measured."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Here is what . holds.\n{last.content}")
        else:
            call = {"name": "fs_list", "args": {"path": "."}, "id": f"call_{uuid.uuid4().hex[:12]}"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # The script already knows its one tool; binding changes nothing.
        return cast("Runnable[LanguageModelInput, AIMessage]", self)


def list_tool(sandbox: Path) -> BaseTool:
    @tool
    def fs_list(path: str) -> str:
        """List the entries of a directory inside the sandbox."""
        target = (sandbox / path).resolve()
        if sandbox not in (target, *target.parents):
            return "error: outside the sandbox"
        return "\n".join(sorted(os.listdir(target)))

    return fs_list


def build_agent(sandbox: Path, saver: SqliteSaver) -> Any:
    # langgraph 1.x points at langchain.agents' create_agent; the prebuilt agent is still the peer.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(ScriptedChatModel(), [list_tool(sandbox)], checkpointer=saver)


def turn(agent: Any, session_id: str) -> float:
    """One message to the agent, to its reply after the tool's result."""
    started = time.perf_counter()
    out = agent.invoke(
        {"messages": [HumanMessage(content=MESSAGE)]}, {"configurable": {"thread_id": session_id}}
    )
    elapsed = time.perf_counter() - started
    messages = out["messages"]
    if not (isinstance(messages[-2], ToolMessage) and str(messages[-1].content).startswith("Here is")):
        raise RuntimeError(f"the turn did not end with a reply after the tool: {messages[-3:]}")
    return elapsed


def conversations(agent: Any, count: int, concurrency: int, run_id: str) -> tuple[list[float], float]:
    """``count`` turns by ``concurrency`` clients, each its own sessions' turns one after the other."""
    latencies: list[float] = []
    lock = threading.Lock()
    tickets: Iterator[int] = itertools.count()

    def client(k: int) -> None:
        done = 0
        while True:
            with lock:
                if next(tickets) >= count:
                    return
            value = turn(agent, f"{run_id}-w{k}-s{done // TURNS_PER_SESSION}")
            done += 1
            with lock:
                latencies.append(value)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        for future in [pool.submit(client, k) for k in range(concurrency)]:
            future.result()
    return latencies, time.perf_counter() - started


def measure(agent: Any, count: int, concurrency: int) -> dict[str, Any]:
    run_id = f"chat-c{concurrency}-{uuid.uuid4().hex[:8]}"
    conversations(agent, max(20, concurrency * 4), concurrency, f"{run_id}-warmup")
    cpu_before = time.process_time()
    latencies, elapsed = conversations(agent, count, concurrency, run_id)
    cpu = time.process_time() - cpu_before
    ordered = sorted(latencies)
    return {
        "scenario": "peer_langgraph_chat_turn",
        "turns": count,
        "concurrency": concurrency,
        "turns_per_s": round(count / elapsed, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))] * 1000, 2),
        "reasoning_cpu_ms_per_turn": round(cpu * 1000 / count, 2),
    }


def run_peers(concurrency: int = 16, quick: bool = False) -> list[dict[str, Any]]:
    low, high = COUNTS
    if quick:
        low, high = low // 5, high // 5
    results = []
    with tempfile.TemporaryDirectory(prefix="langgraph-chat-bench-") as work:
        sandbox = Path(work, "sandbox").resolve()
        sandbox.mkdir()
        for name in ("notes.txt", "report.md", "data.csv"):
            (sandbox / name).write_text("hello\n")
        conn = sqlite3.connect(Path(work, "checkpoints.db"), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()  # journal_mode=WAL
        conn.execute("PRAGMA synchronous=NORMAL")  # as Overseer's stores: WAL, no fsync per commit
        agent = build_agent(sandbox, saver)
        for c, n in ((1, low), (concurrency, high)):
            results.append(measure(agent, n, c))
        conn.close()
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for line in run_peers(args.concurrency, args.quick):
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
