"""`make bench` / `overseer bench`: every benchmark, one JSON object per line on stdout.

    python bench/run.py [SCENARIO ...]

Scenarios: eventstore_append, replay, bus_roundtrip (bench/backbone.py),
firewall_evaluate with the Agent Governance Toolkit peer (bench/firewall_evaluate.py, bench/peers/), hop_floor (bench/hop_floor.py),
pipeline_auto and pipeline_approval with the LangGraph peer (bench/pipeline.py,
bench/peers/), pipeline_timeline and pipeline_approval_timeline (bench/pipeline.py: an AUTO action's steps and
an approved action's steps at concurrency 1), pipeline_replicas
(bench/pipeline.py: pipeline_auto with one and two executor replicas), service_cpu (bench/service_cpu.py: the
CPU per action of the executor, the firewall and the observer, each alone, replaying what it consumed in a
pipeline_auto run), chat_turn with its LangGraph peer (bench/chat.py, bench/peers/), llm_plugin_overhead
and llm_first_token (bench/llm.py: the model plugin against the raw openai client on a scripted server,
and the model's first piece of text to a WebSocket client), mcp_proxy (bench/mcp_proxy.py: an allowed MCP call
through the proxy against the MCP server itself), approval_notice (bench/channels.py: a held call's notice
reaching a webhook and a mail list), chaos (bench/chaos.py: each service and a NATS node killed in turn
during a mixed run: actions lost, effects duplicated, seconds to healthy).
Progress goes to stderr; a failed scenario prints an ``{"scenario": …, "error": …}``
line and the run goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent

# script -> the scenarios it measures (each script takes scenario names as arguments)
SCRIPTS: dict[str, tuple[str, ...]] = {
    "backbone.py": ("eventstore_append", "replay", "bus_roundtrip"),
    "firewall_evaluate.py": ("firewall_evaluate",),
    "hop_floor.py": ("hop_floor",),
    "pipeline.py": (
        "pipeline_auto",
        "pipeline_approval",
        "pipeline_timeline",
        "pipeline_approval_timeline",
        "pipeline_replicas",
    ),
    "service_cpu.py": ("service_cpu",),
    "chat.py": ("chat_turn",),
    "llm.py": ("llm_plugin_overhead", "llm_first_token"),
    "mcp_proxy.py": ("mcp_proxy",),
    "channels.py": ("approval_notice",),
    "chaos.py": ("chaos",),
}


def main(argv: list[str]) -> int:
    wanted = set(argv)
    known = {s for scenarios in SCRIPTS.values() for s in scenarios}
    unknown = wanted - known
    if unknown:
        print(
            f"unknown scenario(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}",
            file=sys.stderr,
        )
        return 2
    failures = 0
    for script, scenarios in SCRIPTS.items():
        selected = [s for s in scenarios if not wanted or s in wanted]
        if not selected or not (BENCH / script).is_file():
            continue
        print(f"[bench] {script} {' '.join(selected)}", file=sys.stderr, flush=True)
        started = time.monotonic()
        args = selected if len(selected) < len(scenarios) else []
        proc = subprocess.run(
            [sys.executable, str(BENCH / script), *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                print(line, flush=True)
        if proc.returncode != 0:
            failures += 1
            print(
                json.dumps({"scenario": script.removesuffix(".py"), "error": f"exit {proc.returncode}"}),
                flush=True,
            )
        print(f"[bench] {script} done in {time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
