"""The peer benchmark: ``pipeline_auto`` and ``pipeline_approval`` built the LangGraph way.

The same two scenarios as ``bench/pipeline.py``, as a LangGraph user would write them: one graph per
action (``firewall`` → ``approval`` → ``execute``), checkpointed durably by ``SqliteSaver`` on a file
(WAL, ``synchronous=NORMAL``, as Overseer's stores), a permission table standing in for the firewall,
``interrupt()`` holding a CONFIRM call, and an automatic operator resuming it with
``Command(resume=…)``. Everything runs in one process; concurrency is threads sharing the saver.

Prints ``{"scenario":"peer_langgraph_pipeline_auto","actions":N,"concurrency":C,"actions_per_s":…,
"p50_ms":…,"p99_ms":…}`` (and ``…_pipeline_approval``).

    python bench/peers/langgraph_pipeline.py [pipeline_auto] [pipeline_approval] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script too: the repository root

from bench.common import latency_summary

LEVELS = {"fs.list": "AUTO", "fs.read": "AUTO", "fs.write": "CONFIRM", "email.send": "APPROVE"}
COUNTS = {"pipeline_auto": (300, 2000), "pipeline_approval": (200, 1000)}


class ActionState(TypedDict, total=False):
    session_id: str
    tool: str
    args: dict[str, Any]
    level: str
    decision: str
    result: str
    error: str


def build_graph(sandbox: Path, saver: SqliteSaver) -> Any:
    def firewall(state: ActionState) -> ActionState:
        tool = state["tool"]
        level = LEVELS.get(tool, "CONFIRM")  # unknown tools wait for a person
        if not isinstance(state.get("args"), dict):
            return {"level": level, "decision": "deny", "error": "arguments must be a mapping"}
        return {"level": level, "decision": "allow" if level == "AUTO" else "hold"}

    def approval(state: ActionState) -> ActionState:
        answer = interrupt({"tool": state["tool"], "args": state["args"], "level": state["level"]})
        return {"decision": "allow" if answer.get("decision") == "approve" else "deny"}

    def execute(state: ActionState) -> ActionState:
        if state.get("decision") != "allow":
            return {"error": state.get("error") or "rejected"}
        args = state["args"]
        target = (sandbox / str(args.get("path", "."))).resolve()
        if sandbox not in (target, *target.parents):
            return {"error": "outside the sandbox"}
        if state["tool"] == "fs.list":
            return {"result": "\n".join(sorted(os.listdir(target)))}
        if state["tool"] == "fs.write":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(str(args.get("content", "")), encoding="utf-8")
            return {"result": f"wrote {target.name}"}
        return {"error": f"unknown tool {state['tool']}"}

    def route(state: ActionState) -> str:
        return "approval" if state.get("decision") == "hold" else "execute"

    graph = StateGraph(ActionState)
    graph.add_node("firewall", firewall)
    graph.add_node("approval", approval)
    graph.add_node("execute", execute)
    graph.add_edge(START, "firewall")
    graph.add_conditional_edges("firewall", route, {"approval": "approval", "execute": "execute"})
    graph.add_edge("approval", "execute")
    graph.add_edge("execute", END)
    return graph.compile(checkpointer=saver)


def auto_action(app: Any, i: int, run_id: str) -> float:
    started = time.perf_counter()
    config = {"configurable": {"thread_id": f"{run_id}-{i}"}}
    out = app.invoke({"session_id": f"{run_id}-{i}", "tool": "fs.list", "args": {"path": "."}}, config)
    elapsed = time.perf_counter() - started
    if "result" not in out:
        raise RuntimeError(f"fs.list failed: {out}")
    return elapsed


def approval_action(app: Any, i: int, run_id: str) -> float:
    started = time.perf_counter()
    config = {"configurable": {"thread_id": f"{run_id}-{i}"}}
    args = {"path": f"bench/{run_id}-{i}.txt", "content": f"action {i}\n"}
    held = app.invoke({"session_id": f"{run_id}-{i}", "tool": "fs.write", "args": args}, config)
    if "__interrupt__" not in held:
        raise RuntimeError(f"fs.write was not held: {held}")
    # The automatic operator approves what it sees.
    out = app.invoke(Command(resume={"decision": "approve"}), config)
    elapsed = time.perf_counter() - started
    if "result" not in out:
        raise RuntimeError(f"fs.write failed after approval: {out}")
    return elapsed


ACTIONS = {"pipeline_auto": auto_action, "pipeline_approval": approval_action}


class LangGraphPipeline:
    """The graph on a checkpoint file and a sandbox of its own, kept for a whole benchmark run so its
    rounds can alternate with another system's (``bench/pipeline.py`` runs a round of Overseer, then a
    round here, and so on: the machine's drift meets both alike)."""

    def __init__(self) -> None:
        self.work = tempfile.TemporaryDirectory(prefix="langgraph-bench-")
        sandbox = Path(self.work.name, "sandbox").resolve()
        sandbox.mkdir()
        (sandbox / "notes.txt").write_text("hello\n")
        self.conn = sqlite3.connect(Path(self.work.name, "checkpoints.db"), check_same_thread=False)
        saver = SqliteSaver(self.conn)
        saver.setup()
        self.conn.execute("PRAGMA synchronous=NORMAL")  # as Overseer's stores: WAL, no fsync per commit
        self.app = build_graph(sandbox, saver)

    def __enter__(self) -> LangGraphPipeline:
        return self

    def __exit__(self, *_: object) -> None:
        self.conn.close()
        self.work.cleanup()

    def warm_up(self, scenario: str, concurrency: int, run_id: str) -> None:
        for i in range(max(20, concurrency * 4)):
            ACTIONS[scenario](self.app, 10**6 + i, run_id)

    def run(
        self, scenario: str, count: int, concurrency: int, run_id: str, first: int = 0
    ) -> tuple[list[float], float]:
        """Actions ``first`` … ``first + count - 1`` of ``scenario`` by ``concurrency`` threads: each
        action's latency, and the wall time of them all."""
        action = ACTIONS[scenario]
        latencies: list[float] = []
        lock = threading.Lock()

        def one(i: int) -> None:
            value = action(self.app, i, run_id)
            with lock:
                latencies.append(value)

        started = time.perf_counter()
        if concurrency == 1:
            for i in range(first, first + count):
                one(i)
        else:
            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                list(pool.map(one, range(first, first + count)))
        return latencies, time.perf_counter() - started


def summary(scenario: str, latencies: list[float], elapsed: float, concurrency: int) -> dict[str, Any]:
    line = latency_summary(latencies, elapsed)
    return {
        "scenario": f"peer_langgraph_{scenario}",
        "actions": line.pop("actions"),
        "concurrency": concurrency,
        **line,
    }


def run_peers(scenarios: list[str], concurrency: int = 32, quick: bool = False) -> list[dict[str, Any]]:
    """Each scenario at concurrency 1 and ``concurrency``, alone (a warm-up, then every action)."""
    results = []
    with LangGraphPipeline() as peer:
        for scenario in scenarios:
            low, high = COUNTS[scenario]
            if quick:
                low, high = low // 5, high // 5
            for c, n in ((1, low), (concurrency, high)):
                run_id = f"{scenario}-c{c}-{uuid.uuid4().hex[:8]}"
                peer.warm_up(scenario, c, run_id)
                results.append(summary(scenario, *peer.run(scenario, n, c, run_id), c))
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", default=[])
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    scenarios = [s for s in COUNTS if not args.scenarios or s in args.scenarios]
    for line in run_peers(scenarios, args.concurrency, args.quick):
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
