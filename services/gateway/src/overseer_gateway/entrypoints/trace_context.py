"""Each HTTP request a span that continues the caller's trace.

A client that sends a W3C ``traceparent`` header (an agent's own tracing, a collector's proxy) gets the
gateway's span as a child of its own, and every event the request causes carries the same trace on,
through the firewall, the executor and the observer: one trace per action, from the caller's side.
Without the header the request starts a trace. It wraps the whole application, the fast path of
``POST /v1/actions`` included.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from overseer_runtime import tracing

_CONTEXT_HEADERS = (b"traceparent", b"tracestate")


class HttpTraceContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

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
        attributes = {"http.request.method": method, "url.path": scope["path"]}

        async def send_with_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                tracing.set_attribute("http.response.status_code", message["status"])
            await send(message)

        with tracing.span_for_event(f"gateway HTTP {method}", incoming, attributes):
            await self.app(scope, receive, send_with_status)
