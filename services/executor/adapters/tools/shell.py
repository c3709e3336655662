"""``shell.run``: a command in the sandbox directory, with a time limit. Irreversible, APPROVE by default.

The command runs in its own process group with the sandbox as working
directory and a minimal environment; at the time limit, or when the call is
cancelled, the whole group is killed, so no child outlives the contract.
A non-zero exit status fails the call with the tail of stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import orjson

from overseer.executor.adapters.tools.base import StaticToolPlugin
from overseer.executor.domain.tools import ToolCall, ToolError, ToolSpec

MAX_OUTPUT_CHARS = 8000

RUN = ToolSpec(
    name="shell.run",
    description="Run a shell command in the sandbox directory.",
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    irreversible=True,
    level="APPROVE",
    time_limit_seconds=30,
)


class ShellTool(StaticToolPlugin):
    def __init__(self, sandbox: Path, time_limit_seconds: float = 30.0) -> None:
        super().__init__()
        Path(sandbox).mkdir(parents=True, exist_ok=True)
        self.root = Path(sandbox).resolve()
        self.time_limit_seconds = time_limit_seconds
        self.add(RUN, self.run)

    def environment(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "OVERSEER_SANDBOX": str(self.root),
        }

    async def run(self, args: dict[str, Any], tc: ToolCall) -> str:
        limit = min(float(args.get("timeout_seconds") or self.time_limit_seconds), self.time_limit_seconds)
        process = await asyncio.create_subprocess_shell(
            args["command"],
            cwd=self.root,
            env=self.environment(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), limit)
        except TimeoutError:
            raise ToolError(f"shell command exceeded its time limit of {limit:g}s and was killed") from None
        finally:
            if process.returncode is None:
                # Timed out or cancelled: kill the whole group, then reap it.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    await asyncio.shield(process.wait())
        out = stdout.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
        err = stderr.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
        if process.returncode != 0:
            raise ToolError(f"exit status {process.returncode}: {err.strip()[-500:] or out.strip()[-500:]}")
        return orjson.dumps({"exit_code": process.returncode, "stdout": out, "stderr": err}).decode()
