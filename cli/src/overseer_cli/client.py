"""Which gateway the CLI talks to, with which token, and how its answers and refusals are shown.

Resolution, first match wins:

* URL: ``--url``, ``OVERSEER_URL``, ``gateway_url`` in ``OVERSEER_HOME/stack.json`` (written by
  ``overseer up``), then ``http://<gateway.host>:<gateway.port>`` from the configuration
  (``http://127.0.0.1:8080`` by default).
* token: ``--token``, ``OVERSEER_TOKEN``, then the dev token of the role the command needs from
  ``OVERSEER_HOME/tokens.json`` (operator for approvals, admin for policy, viewer for reading …).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import httpx
import typer
from rich.console import Console
from rich.text import Text

from overseer_gateway.settings import GatewaySettings
from overseer_runtime.config import ConfigurationError, Settings, load_settings

console = Console(highlight=False)
errors = Console(stderr=True, highlight=False)


P = ParamSpec("P")
R = TypeVar("R")


class CliError(Exception):
    """Shown in red and turned into exit code ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def friendly(fn: Callable[P, R]) -> Callable[P, R]:
    """Show a :class:`CliError` as one red line and exit with its code, and a configuration's problems
    each on a line (exit 2), instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except CliError as exc:
            errors.print(Text.assemble(("error:", "red"), " ", exc.message))
            raise typer.Exit(exc.code) from None
        except ConfigurationError as exc:  # a typo in overseer.toml or an OVERSEER_* variable
            errors.print(Text.assemble(("error:", "red"), " ", str(exc)))
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except EOFError:
            errors.print("[red]error:[/] no answer: the input ended before the question was answered")
            raise typer.Exit(1) from None

    return wrapper


def gateway_unreachable(target: Target, exc: httpx.HTTPError) -> CliError:
    """The refusal of a command whose gateway does not answer at all."""
    return CliError(
        f"cannot reach the gateway at {target.url} ({type(exc).__name__}). Is the stack of {target.home} "
        "running? Start it with `overseer up` (or `make run`), or set OVERSEER_HOME to the home of the one "
        "that runs."
    )


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Target:
    url: str
    token: str | None
    home: Path

    @property
    def ws_url(self) -> str:
        if self.url.startswith("https://"):
            return "wss://" + self.url[len("https://") :].rstrip("/") + "/v1/ws"
        return "ws://" + self.url.removeprefix("http://").rstrip("/") + "/v1/ws"


def resolve(url: str | None, token: str | None, role: str, settings: Settings | None = None) -> Target:
    settings = settings or load_settings()
    home = settings.home
    url = url or os.environ.get("OVERSEER_URL")
    if not url:
        stack = read_json(home / "stack.json") or {}
        url = stack.get("gateway_url")
    if not url:
        gateway = settings.typed("gateway", GatewaySettings)
        url = f"http://{gateway.host}:{gateway.port}"
    token = token or os.environ.get("OVERSEER_TOKEN")
    if not token:
        tokens = read_json(home / "tokens.json") or {}
        token = tokens.get(role)
    return Target(url=str(url).rstrip("/"), token=token, home=home)


def token_for(target: Target, role: str) -> str | None:
    """Another role's dev token on the same machine (the demo proposes as agent, approves as operator)."""
    tokens = read_json(target.home / "tokens.json") or {}
    return tokens.get(role) or target.token


def problem_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"{response.status_code} {response.reason_phrase}: {response.text[:300]}"
    if isinstance(body, dict) and "detail" in body:
        return f"{body.get('status', response.status_code)} {body.get('title', '')}: {body['detail']}"
    return f"{response.status_code}: {body}"


class Gateway:
    """A small synchronous REST client (keep-alive) that raises :class:`CliError` with the problem detail."""

    def __init__(self, target: Target, timeout: float = 70.0) -> None:
        self.target = target
        headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
        self.http = httpx.Client(base_url=target.url, headers=headers, timeout=timeout)

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def call(self, method: str, path: str, *, token: str | None = None, **kwargs: Any) -> Any:
        if token:
            kwargs.setdefault("headers", {})["Authorization"] = f"Bearer {token}"
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise gateway_unreachable(self.target, exc) from exc
        if response.status_code >= 400:
            raise CliError(problem_text(response), code=1)
        return response.json() if response.content else None

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, body: Any, **kwargs: Any) -> Any:
        return self.call("POST", path, json=body, **kwargs)
