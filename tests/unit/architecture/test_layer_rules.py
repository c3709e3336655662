"""The layers are checked by `make lint`: ruff refuses I/O and adapters in domain/ and application/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SERVICES = ("reasoning", "executor", "col", "firewall", "observer", "gateway")


def lint(path: str, source: str) -> subprocess.CompletedProcess[str]:
    """ruff on ``source`` as if it were the file at ``path`` (nothing is written to the tree)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--output-format",
            "concise",
            "--stdin-filename",
            path,
            "-",
        ],
        input=source,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("layer", ["domain", "application"])
def test_a_domain_or_application_module_that_imports_sqlite_fails_lint(service: str, layer: str) -> None:
    result = lint(
        f"services/{service}/src/overseer_{service}/{layer}/probe.py", "import sqlite3\n\nprint(sqlite3)\n"
    )
    assert result.returncode == 1
    assert "TID251 `sqlite3` is banned" in result.stdout


@pytest.mark.parametrize("service", SERVICES)
def test_application_code_that_imports_its_adapters_fails_lint(service: str) -> None:
    source = f"from overseer_{service}.adapters import anything\n\nprint(anything)\n"
    result = lint(f"services/{service}/src/overseer_{service}/application/probe.py", source)
    assert result.returncode == 1
    assert f"TID251 `overseer_{service}.adapters` is banned" in result.stdout


@pytest.mark.parametrize("module", ["nats.aio.client", "httpx", "overseer_runtime.store"])
def test_the_domain_may_not_reach_the_bus_the_network_or_the_store(module: str) -> None:
    result = lint(
        "services/firewall/src/overseer_firewall/domain/probe.py", f"import {module}\n\nprint({module})\n"
    )
    assert result.returncode == 1
    assert "TID251" in result.stdout


def test_adapters_and_bootstrap_may_import_io_and_adapters() -> None:
    source = "import sqlite3\n\nfrom overseer_col.adapters import read_model\n\nprint(sqlite3, read_model)\n"
    for path in (
        "services/col/src/overseer_col/adapters/probe.py",
        "services/col/src/overseer_col/bootstrap.py",
    ):
        result = lint(path, source)
        assert result.returncode == 0, result.stdout


def test_a_function_more_complex_than_ten_branches_fails_lint() -> None:
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(11))
    result = lint(
        "libs/events/src/overseer_events/probe.py", f"def pick(x: int) -> int:\n{branches}    return -1\n"
    )
    assert result.returncode == 1
    assert "C901 `pick` is too complex" in result.stdout
