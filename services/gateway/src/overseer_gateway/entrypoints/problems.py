"""Every 4xx and 5xx as ``application/problem+json`` (RFC 9457): ``type``, ``title``, ``status``, ``detail``."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from overseer_runtime.rpc import RpcError

log = logging.getLogger("overseer.gateway.http")

PROBLEM = "application/problem+json"


class ProblemError(Exception):
    """Raise anywhere in a route: answered as a problem document with this status."""

    def __init__(
        self,
        status: int,
        detail: str,
        title: str | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.title = title
        self.headers = headers
        self.extra = extra


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem(
    status: int, detail: str, title: str | None = None, headers: dict[str, str] | None = None, **extra: Any
) -> Response:
    body = {
        "type": "about:blank",
        "title": title or _title(status),
        "status": status,
        "detail": detail,
        **extra,
    }
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM, headers=headers)


def _location(loc: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        where, rest = parts[0], parts[1:]
        return f"{where} {'.'.join(rest)}" if rest else where
    return ".".join(parts) or "request"


def validation_detail(errors: list[dict[str, Any]]) -> tuple[int, str, str, list[dict[str, Any]]]:
    """(status, title, detail, errors) for a request FastAPI could not validate."""
    for error in errors:
        if error.get("type") == "json_invalid":
            ctx = error.get("ctx") or {}
            reason = ctx.get("error", "invalid JSON")
            position = error.get("loc", ("body", ""))[-1]
            return (
                400,
                "Malformed JSON",
                f"the request body is not valid JSON: {reason} (at position {position})",
                [],
            )
    details = []
    cleaned: list[dict[str, Any]] = []
    for error in errors[:10]:
        where = _location(error.get("loc", ()))
        message = str(error.get("msg", "invalid"))
        details.append(f"{where}: {message}")
        cleaned.append(
            {"loc": [str(p) for p in error.get("loc", ())], "msg": message, "type": error.get("type")}
        )
    more = f" (and {len(errors) - 10} more)" if len(errors) > 10 else ""
    return 422, "Invalid request", "; ".join(details) + more, cleaned


def refusal(exc: ProblemError) -> Response:
    return problem(exc.status, exc.detail, exc.title, exc.headers, **exc.extra)


def peer_refusal(exc: RpcError) -> Response:
    """Another service's refusal keeps its status; one that did not answer is 503/504."""
    status = exc.status if 400 <= exc.status <= 599 else 502
    if status >= 500:
        log.warning("peer error %s: %s", status, exc.detail)
    return problem(status, exc.detail, **{k: v for k, v in exc.extra.items() if k not in ("type", "title")})


def crash(exc: Exception) -> Response:
    log.exception("unhandled error", exc_info=exc)
    return problem(500, f"internal error: {type(exc).__name__}")


def install(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else orjson.dumps(exc.detail).decode()
        if exc.status_code == 404 and detail == "Not Found":
            detail = "no such resource: check the path (see /openapi.json)"
        elif exc.status_code == 405 and detail == "Method Not Allowed":
            detail = "this path does not accept that method (see /openapi.json)"
        return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> Response:
        status, title, detail, errors = validation_detail(list(exc.errors()))
        if errors:
            return problem(status, detail, title, errors=errors)
        return problem(status, detail, title)

    @app.exception_handler(ProblemError)
    async def refused(_: Request, exc: ProblemError) -> Response:
        return refusal(exc)

    @app.exception_handler(RpcError)
    async def peer_refused(_: Request, exc: RpcError) -> Response:
        return peer_refusal(exc)

    @app.exception_handler(Exception)
    async def crashed(_: Request, exc: Exception) -> Response:
        return crash(exc)
