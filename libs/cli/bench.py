"""``overseer bench``: run the benchmark scripts under ``bench/`` and show their JSON lines with progress.

Each script prints one JSON object per line; scenarios map to scripts here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

# scenario -> (script relative to the repository, arguments that select it)
SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "eventstore_append": ("bench/backbone.py", ["eventstore_append"]),
    "replay": ("bench/backbone.py", ["replay"]),
    "bus_roundtrip": ("bench/backbone.py", ["bus_roundtrip"]),
    "firewall_evaluate": ("bench/firewall_evaluate.py", []),
    "pipeline_auto": ("bench/pipeline.py", ["--scenario", "pipeline_auto", "--no-peers"]),
    "pipeline_approval": ("bench/pipeline.py", ["--scenario", "pipeline_approval", "--no-peers"]),
    "peer_langgraph": ("bench/peers/langgraph_pipeline.py", []),
    "pipeline": ("bench/pipeline.py", []),  # both pipeline scenarios, LangGraph's, and the ratios
}
DEFAULT = ["eventstore_append", "replay", "bus_roundtrip", "firewall_evaluate", "pipeline"]


def repository_root() -> Path:
    for candidate in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]):
        if (candidate / "bench").is_dir() and (candidate / "pyproject.toml").is_file():
            return candidate
    raise FileNotFoundError("cannot find the repository's bench/ folder; run from the repository")


def run(scenarios: list[str], console: Console, as_json: bool = True) -> int:
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        console.print(f"[red]unknown scenario(s): {', '.join(unknown)}[/]; known: {', '.join(SCENARIOS)}")
        return 2
    root = repository_root()
    chosen = scenarios or DEFAULT
    failed = 0
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    ) as progress:
        task = progress.add_task("benchmarks", total=len(chosen))
        for name in chosen:
            script, args = SCENARIOS[name]
            progress.update(task, description=f"{name}")
            env = dict(os.environ)
            env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
            process = subprocess.Popen(
                [sys.executable, str(root / script), *args], cwd=root, stdout=subprocess.PIPE, env=env
            )
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode().strip()
                if not line:
                    continue
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    progress.console.print(f"[bright_black]{line}[/]")
                    continue
                print(line, flush=True)
            if process.wait() != 0:
                failed += 1
                progress.console.print(f"[red]{name} exited with {process.returncode}[/]")
            progress.advance(task)
    return 1 if failed else 0
