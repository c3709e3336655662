"""Each HTTP request observed: a span that continues the caller's trace, and its route, status and time
in the gateway's metrics.

A client that sends a W3C ``traceparent`` header (an agent's own tracing, a collector's proxy) gets the
gateway's span as a child of its own, and every event the request causes carries the same trace on,
through the firewall, the executor and the observer: one trace per action, from the caller's side.
Without the header the request starts a trace. The metrics count requests by route template (never by
raw path: ids would make every request a series of its own) and status. It wraps the whole
application, the fast path of ``POST /v1/actions`` and ``GET /v1/actions/{execution_id}`` included.
"""

from __future__ import annotations

import time

from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from overseer_runtime import tracing
from overseer_runtime.metrics import Series, ServiceMetrics

_CONTEXT_HEADERS = (b"traceparent", b"tracestate")
_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 60.0)


def route_of(scope: Scope) -> str:
    """The request's route template: FastAPI's route when it matched one, the fast path's own, the
    console's assets; ``unmatched`` for everything else (a 404)."""
    route = scope.get("route")
    template = getattr(route, "path", None)
    if isinstance(template, str):
        return template
    path: str = scope["path"]
    if path == "/v1/actions":
        return path
    if path.startswith("/v1/actions/") and path.count("/") == 3:
        return "/v1/actions/{execution_id}"
    if path.startswith("/console/"):
        return "/console/{asset}"
    return "unmatched"


class HttpObservation:
    def __init__(self, app: ASGIApp, metrics: ServiceMetrics) -> None:
        self.app = app
        self.requests = Counter(
            "overseer_http_requests",
            "HTTP requests the gateway answered, by method, route and status",
            ["service", "method", "route", "status"],
            registry=metrics.registry,
        )
        self.seconds = Histogram(
            "overseer_http_request_seconds",
            "How long the gateway took to answer, by method and route",
            ["service", "method", "route"],
            buckets=_SECONDS,
            registry=metrics.registry,
        )
        self._requests_of, self._seconds_of = (
            Series(self.requests, metrics.service),
            Series(self.seconds, metrics.service),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = {
            name.decode("latin-1"): value.decode("latin-1")
            for name, value in scope.get("headers", ())
            if name in _CONTEXT_HEADERS
        }
        method = scope["method"]
        status = 500  # what the client sees when the application fails before answering

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                tracing.set_attribute("http.response.status_code", status)
            await send(message)

        started = time.perf_counter()
        try:
            with tracing.span_for_event(
                f"gateway HTTP {method}", incoming, {"http.request.method": method, "url.path": scope["path"]}
            ):
                await self.app(scope, receive, send_with_status)
        finally:
            route = route_of(scope)
            self._requests_of(method, route, str(status)).inc()
            self._seconds_of(method, route).observe(time.perf_counter() - started)
