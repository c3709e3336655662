"""``overseer bench``: the repository's benchmarks (``bench/run.py``), with a progress bar.

The JSON lines go to stdout exactly as ``make bench`` prints them; progress and the scripts' notes go
to stderr. Each benchmark script runs as its own process, one after the other.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


def repository_root() -> Path:
    for candidate in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]):
        if (candidate / "bench" / "run.py").is_file():
            return candidate
    raise FileNotFoundError("cannot find bench/run.py: run `overseer bench` from the repository")


def _runner(root: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("overseer_bench_run", root / "bench" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(scenarios: list[str]) -> int:
    errors = Console(stderr=True)
    try:
        root = repository_root()
    except FileNotFoundError as exc:
        errors.print(f"[red]error:[/] {exc}")
        return 2
    scripts: dict[str, tuple[str, ...]] = _runner(root).SCRIPTS
    known = {s for group in scripts.values() for s in group}
    unknown = sorted(set(scenarios) - known)
    if unknown:
        errors.print(f"[red]unknown scenario(s):[/] {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return 2
    plan = [
        (script, [s for s in group if not scenarios or s in scenarios])
        for script, group in scripts.items()
        if (not scenarios or set(group) & set(scenarios)) and (root / "bench" / script).is_file()
    ]
    failed = 0
    interactive = sys.stdout.isatty() and errors.is_terminal
    env = dict(os.environ)
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=errors,
    ) as progress:
        task = progress.add_task("benchmarks", total=len(plan))
        for _script, selected in plan:
            progress.update(task, description=" ".join(selected))
            process = subprocess.Popen(
                [sys.executable, str(root / "bench" / "run.py"), *selected],
                cwd=root,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert process.stdout is not None
            for line in process.stdout:
                if not line.startswith("{"):
                    continue
                if interactive:  # printed above the live progress bar, which stays at the bottom
                    progress.console.print(line.rstrip(), markup=False, highlight=False, soft_wrap=True)
                else:  # piped: plain JSON lines on stdout, as `make bench`
                    print(line.rstrip(), flush=True)
            if process.wait() != 0:
                failed += 1
            progress.advance(task)
    return 1 if failed else 0
