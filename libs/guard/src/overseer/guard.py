"""Overseer's Python guard: the firewall in front of an agent's own tool functions.

An agent whose tools run in its own process (a LangGraph ``ToolNode``, plain functions an LLM calls)
wraps each one::

    from overseer.guard import Guard

    guard = Guard("http://127.0.0.1:8080", token="<an agent token>")

    @guard.tool(irreversible=True)
    def send_invoice(customer: str, amount: float) -> str:
        ...

    send_invoice(customer="acme", amount=12.5)

Calling the function proposes the call to Overseer (``POST /v1/actions`` with ``runs_at: agent``), waits
for the firewall's verdict (and for a person, when the call is held), runs the function here only when it
is allowed, with the approved arguments, and reports how it ended (``POST /v1/actions/{id}/outcome``), so
the execution is recorded, audited and remembered like any other. ``async def`` functions are guarded the
same way, without blocking the event loop. When the call may not run, the function is not called and one
of these is raised instead:

* :class:`ActionDenied`: the firewall refused it (the reason is its own);
* :class:`ActionRejected`: a person rejected it, or it was cancelled;
* :class:`ApprovalTimedOut`: nobody decided within ``timeout`` seconds (the call is then withdrawn, so
  it cannot run later).

Arguments are sent as JSON (the function's parameters by name, defaults included); the result is reported
as text (``str``, or JSON for anything else). If the process dies between the approval and the report,
Overseer never takes the call as done: past its ``agent_outcome_seconds`` a person is asked what happened.
"""

from __future__ import annotations

import functools
import inspect
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar, cast

import httpx

__all__ = ["ActionDenied", "ActionRejected", "ApprovalTimedOut", "Guard", "GuardError"]

P = ParamSpec("P")
R = TypeVar("R")

POLL_SECONDS = 10.0
"""The longest single wait for a decision (the gateway answers sooner when one comes)."""


class GuardError(Exception):
    """The call did not run; ``execution_id`` names it in Overseer (None when it was refused at once)."""

    def __init__(self, message: str, execution_id: str | None = None) -> None:
        super().__init__(message)
        self.execution_id = execution_id


class ActionDenied(GuardError):
    """The firewall refused the call."""


class ActionRejected(GuardError):
    """A person rejected the call, or it was cancelled."""


class ApprovalTimedOut(GuardError):
    """Nobody decided on the call in time; it was withdrawn and will not run."""


@dataclass(frozen=True, slots=True)
class _Request:
    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


# A conversation with the gateway, written once: it yields the requests to make and receives their
# responses; a synchronous and an asynchronous driver make them (so sync and async tools share the rules).
Conversation = Generator[_Request, httpx.Response, R]


@dataclass(frozen=True, slots=True)
class _Approved:
    execution_id: str
    args: dict[str, Any]
    args_hash: str


@dataclass(slots=True)
class Guard:
    """A connection to one Overseer gateway as one agent (its token), for the tools it guards.

    ``session_id`` groups the calls (default: one new session per guard); ``timeout`` is how long a call
    held for a person waits for a decision.
    """

    url: str
    token: str
    session_id: str = field(default_factory=lambda: f"guard-{uuid.uuid4().hex[:12]}")
    timeout: float = 300.0
    http_timeout: float = POLL_SECONDS + 30.0

    def tool(
        self, *, name: str | None = None, irreversible: bool = False, summary: str | None = None
    ) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """Guard a sync or ``async def`` function: ``@guard.tool()`` or ``@guard.tool(irreversible=True)``.

        ``name``: the tool's name in Overseer (default: the function's); ``irreversible``: its effect
        cannot be taken back (never run twice for the same arguments, and held for approval by default);
        ``summary``: what a call does, in words, for the person who may have to approve it.
        """

        def wrap(fn: Callable[P, R]) -> Callable[P, R]:
            return self._guarded(fn, name or fn.__name__, irreversible, summary)

        return wrap

    def _guarded(
        self, fn: Callable[P, R], name: str, irreversible: bool, summary: str | None
    ) -> Callable[P, R]:
        signature = inspect.signature(fn)

        def arguments(*args: Any, **kwargs: Any) -> dict[str, Any]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                async with self._async_client() as http:
                    approved = await _drive_async(
                        http, self._ask(name, arguments(*args, **kwargs), irreversible, summary)
                    )
                    try:
                        result = await cast(Callable[..., Awaitable[Any]], fn)(**approved.args)
                    except Exception as exc:
                        await _drive_async(http, _report(approved, failed=exc))
                        raise
                    await _drive_async(http, _report(approved, result=result))
                    return result

            return cast(Callable[P, R], guarded_async)

        @functools.wraps(fn)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R:
            with self._client() as http:
                approved = _drive(http, self._ask(name, arguments(*args, **kwargs), irreversible, summary))
                try:
                    result = cast(Callable[..., R], fn)(**approved.args)
                except Exception as exc:
                    _drive(http, _report(approved, failed=exc))
                    raise
                _drive(http, _report(approved, result=result))
                return result

        return guarded

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=self._headers(), timeout=self.http_timeout)

    def _async_client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers=self._headers(), timeout=self.http_timeout)

    def _ask(
        self, name: str, args: dict[str, Any], irreversible: bool, summary: str | None
    ) -> Conversation[_Approved]:
        """Propose the call and wait until it may run (the approved arguments) or raise why it may not."""
        body: dict[str, Any] = {"session_id": self.session_id, "tool": name, "args": args, "runs_at": "agent"}
        if irreversible:
            body["irreversible"] = True
        if summary:
            body["summary"] = summary
        proposed = yield _Request("POST", "/v1/actions", body)
        if proposed.status_code != 202:
            raise ActionDenied(f"{name} was refused: {_detail(proposed)}")
        execution_id = str(proposed.json()["execution_id"])
        deadline = time.monotonic() + self.timeout
        while (left := deadline - time.monotonic()) > 0:
            params = {"wait": round(min(left, POLL_SECONDS), 3)}
            asked = yield _Request("GET", f"/v1/actions/{execution_id}/permission", params=params)
            if asked.status_code == 404:  # not judged yet: ask again
                continue
            if asked.status_code != 200:
                raise GuardError(f"{name}: {_detail(asked)}", execution_id)
            permission = asked.json()
            match permission["decision"]:
                case "run":
                    return _Approved(execution_id, dict(permission["args"]), str(permission["args_hash"]))
                case "stop":
                    raise _refusal(name, execution_id, permission)
        reason = {"reason": "nobody decided before the agent's call timed out"}
        yield _Request("POST", f"/v1/actions/{execution_id}/cancel", reason)
        raise ApprovalTimedOut(
            f"{name}: nobody decided within {self.timeout:g}s; it was withdrawn", execution_id
        )


def _report(
    approved: _Approved, *, result: Any = None, failed: BaseException | None = None
) -> Conversation[None]:
    """Report how the call ended, with the hash of the approved arguments it ran with."""
    if failed is None:
        text = result if isinstance(result, str) else json.dumps(result, default=str)
        body = {"status": "completed", "result": text[:16_000], "args_hash": approved.args_hash}
    else:
        error = f"{type(failed).__name__}: {failed}"[:16_000]
        body = {"status": "failed", "error": error, "args_hash": approved.args_hash}
    reported = yield _Request("POST", f"/v1/actions/{approved.execution_id}/outcome", body)
    if reported.status_code != 202:
        raise GuardError(f"the outcome was not recorded: {_detail(reported)}", approved.execution_id)


def _refusal(name: str, execution_id: str, permission: dict[str, Any]) -> GuardError:
    reason = permission.get("reason") or "no reason was given"
    if permission.get("refused_by") == "firewall":
        return ActionDenied(f"{name} was denied by the firewall: {reason}", execution_id)
    return ActionRejected(f"{name} was not run ({permission.get('status')}): {reason}", execution_id)


def _detail(response: httpx.Response) -> str:
    try:
        return str(response.json().get("detail") or response.text)
    except ValueError:
        return f"{response.status_code} {response.text[:300]}"


def _drive(http: httpx.Client, conversation: Conversation[R]) -> R:
    response: httpx.Response | None = None
    try:
        while True:
            request = conversation.send(response) if response is not None else next(conversation)
            response = http.request(request.method, request.path, json=request.body, params=request.params)
    except StopIteration as done:
        return cast(R, done.value)


async def _drive_async(http: httpx.AsyncClient, conversation: Conversation[R]) -> R:
    response: httpx.Response | None = None
    try:
        while True:
            request = conversation.send(response) if response is not None else next(conversation)
            response = await http.request(
                request.method, request.path, json=request.body, params=request.params
            )
    except StopIteration as done:
        return cast(R, done.value)
