"""A pure-ASGI fast path for the gateway's hot endpoints, in front of the FastAPI application.

Why it exists: every action an agent takes is one ``POST /v1/actions`` and one
``GET /v1/actions/{id}?wait=S``, or one ``POST /v1/actions?wait=S``, and every decision on a held one
a ``POST /v1/approvals/{id}``. Through FastAPI most of their cost is the middleware chain, routing and
dependency solving, not the work; this path does the work without them.

It answers exactly as the FastAPI routes do, because it does the same things with the same parts:
the body limit, strict-JSON rules and depth limit (:class:`BodyLimit`), the token check
(:func:`auth.check`, constant time), the request models (:class:`ActionRequest`,
:class:`DecisionRequest`), the work (:func:`accept_action`, :func:`proposal_answer`,
:func:`settled_view`, :func:`record_decision`) and the problem documents (``problems.py``). Anything it
is not sure to answer the same way goes to FastAPI unchanged (a body already read is replayed): other
paths and methods, repeated headers, content types other than ``application/json``, empty bodies or
bodies the model refuses (FastAPI then writes its 422), malformed execution ids (422 too), query values
other than plain numbers and the ``until`` words, a decision with a query string. The FastAPI routes
stay declared, so ``/openapi.json`` does not change.
"""

from __future__ import annotations

import re
from typing import Any, cast, get_args
from urllib.parse import parse_qsl

from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from overseer_events.views import Until
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.actions import ID
from overseer_gateway.entrypoints.answers import JSON, send_json
from overseer_gateway.entrypoints.auth import bearer_token, check
from overseer_gateway.entrypoints.context import Gateway
from overseer_gateway.entrypoints.limits import BodyLimit, replay, replay_body
from overseer_gateway.entrypoints.problems import ProblemError, crash, peer_refusal, refusal
from overseer_gateway.entrypoints.routes_actions import (
    MAX_EXECUTION_ID,
    MAX_WAIT,
    accept_action,
    proposal_answer,
    record_decision,
    settled_view,
)
from overseer_gateway.entrypoints.schemas import ActionRequest, DecisionRequest
from overseer_runtime.rpc import RpcError

ACTIONS = "/v1/actions"
ONE_ACTION = "/v1/actions/"
ONE_APPROVAL = "/v1/approvals/"
# What FastAPI reads the same way for ``wait`` (a float, 0..60): plain decimals, no sign or exponent.
PLAIN_WAIT = re.compile(r"(0|[1-9][0-9]{0,2})(\.[0-9]{1,9})?")
UNTIL: frozenset[str] = frozenset(get_args(Until))


class FastActions:
    def __init__(self, app: ASGIApp, gateway: Gateway, *, max_body_bytes: int, max_json_depth: int) -> None:
        self.app = app  # FastAPI: everything this does not answer itself
        self.gateway = gateway
        self.limit = BodyLimit(max_body_bytes, max_json_depth)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            path: str = scope["path"]
            method: str = scope["method"]
            if method == "POST" and path == ACTIONS:
                await self._propose(scope, receive, send)
                return
            if method == "GET" and path.startswith(ONE_ACTION):
                execution_id = path[len(ONE_ACTION) :]
                if _execution_id(execution_id):
                    await self._consequence(scope, receive, send, execution_id)
                    return
            if method == "POST" and path.startswith(ONE_APPROVAL) and not scope.get("query_string"):
                execution_id = path[len(ONE_APPROVAL) :]
                if _execution_id(execution_id):
                    await self._decide(scope, receive, send, execution_id)
                    return
        await self.app(scope, receive, send)

    async def _propose(self, scope: Scope, receive: Receive, send: Send) -> None:
        query = _plain_query(scope.get("query_string", b""))
        if query is None:
            await self.app(scope, receive, send)
            return
        read = await self._document(scope, receive, send, Role.AGENT)
        if read is None:
            return
        document, body, caller = read
        try:
            request = ActionRequest.model_validate(document)
        except ValidationError:
            await self.app(scope, replay_body(body, receive), send)
            return
        try:
            accepted = await accept_action(self.gateway, request, caller)
        except Exception as exc:
            await _failure(exc)(scope, receive, send)
            return
        await send_json(send, *await proposal_answer(self.gateway, accepted, *query))

    async def _decide(self, scope: Scope, receive: Receive, send: Send, execution_id: str) -> None:
        read = await self._document(scope, receive, send, Role.OPERATOR)
        if read is None:
            return
        document, body, caller = read
        try:
            request = DecisionRequest.model_validate(document)
        except ValidationError:
            await self.app(scope, replay_body(body, receive), send)
            return
        try:
            answer = await record_decision(self.gateway, execution_id, request, caller)
        except Exception as exc:
            await _failure(exc)(scope, receive, send)
            return
        await send_json(send, 200, answer)

    async def _document(
        self, scope: Scope, receive: Receive, send: Send, role: Role
    ) -> tuple[Any, bytes, Caller] | None:
        """The request's JSON document, its body and the caller whose token may act as ``role``; None when
        the request was answered here (413, 400, 401, 403) or handed to FastAPI (anything but a plain
        JSON body, in the order FastAPI reads them)."""
        headers = _headers(scope)
        if headers is None:
            await self.app(scope, receive, send)
            return None
        authorization, content_type, content_length = headers
        body = await self.limit.read(scope, receive, send, content_length)
        if body is None:  # too large: answered 413
            return None
        if not isinstance(body, bytes):  # the client went away: FastAPI deals with it as before
            await self.app(scope, replay([body], receive), send)
            return None
        if not body or not _plain_json(content_type):
            await self.app(scope, replay_body(body, receive), send)
            return None
        document, malformed = self.limit.parse_json(body)
        if malformed is not None:
            await malformed(scope, receive, send)
            return None
        try:
            caller = check(self.gateway.tokens, bearer_token(_text(authorization)), role)
        except ProblemError as exc:
            await refusal(exc)(scope, receive, send)
            return None
        return document, body, caller

    async def _consequence(self, scope: Scope, receive: Receive, send: Send, execution_id: str) -> None:
        headers = _headers(scope)
        if headers is None:
            await self.app(scope, receive, send)
            return
        try:
            check(self.gateway.tokens, bearer_token(_text(headers[0])), Role.VIEWER)
        except ProblemError as exc:
            await refusal(exc)(scope, receive, send)
            return
        query = _plain_query(scope.get("query_string", b""))
        if query is None:
            await self.app(scope, receive, send)
            return
        wait, until = query
        try:
            view = await settled_view(self.gateway, execution_id, wait, until)
        except Exception as exc:
            await _failure(exc)(scope, receive, send)
            return
        await send_json(send, 200, view)


def _execution_id(text: str) -> bool:
    """Whether FastAPI's path parameter ``execution_id`` takes ``text`` as it is."""
    return len(text) <= MAX_EXECUTION_ID and ID.fullmatch(text) is not None


def _headers(scope: Scope) -> tuple[bytes | None, bytes | None, bytes | None] | None:
    """Authorization, Content-Type, Content-Length; None when one of them is repeated."""
    authorization = content_type = content_length = None
    for name, value in scope["headers"]:
        if name == b"authorization":
            if authorization is not None:
                return None
            authorization = value
        elif name == b"content-type":
            if content_type is not None:
                return None
            content_type = value
        elif name == b"content-length":
            if content_length is not None:
                return None
            content_length = value
    return authorization, content_type, content_length


def _plain_query(query_string: bytes) -> tuple[float, Until] | None:
    """``wait`` and ``until`` read as FastAPI reads them, or None when they are anything but plain."""
    if not query_string:
        return 0.0, "settled"
    # As Starlette's QueryParams: latin-1, blank values kept, the last of a repeated name wins.
    params = dict(parse_qsl(query_string.decode("latin-1"), keep_blank_values=True))
    wait, until = params.get("wait", "0"), params.get("until", "settled")
    if not PLAIN_WAIT.fullmatch(wait) or until not in UNTIL:
        return None
    seconds = float(wait)
    return (seconds, cast(Until, until)) if seconds <= MAX_WAIT else None  # one of UNTIL, checked above


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


def _plain_json(content_type: bytes | None) -> bool:
    return content_type is not None and content_type.split(b";", 1)[0].strip().lower() == JSON


def _failure(exc: Exception) -> Response:
    """The problem document FastAPI's exception handlers answer (``problems.install``)."""
    if isinstance(exc, ProblemError):
        return refusal(exc)
    if isinstance(exc, RpcError):
        return peer_refusal(exc)
    return crash(exc)
