"""The gateway's FastAPI application (routes, problem documents, body limit, OpenAPI), and what is served:
the fast path for the hot endpoints in front of it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.routing import Route
from starlette.types import ASGIApp

from overseer_gateway.entrypoints import (
    problems,
    routes_actions,
    routes_chat,
    routes_console,
    routes_controls,
    routes_cos,
    routes_docs,
    routes_links,
    routes_views,
    routes_ws,
)
from overseer_gateway.entrypoints.bus_guard import BusGuard
from overseer_gateway.entrypoints.context import Gateway
from overseer_gateway.entrypoints.docs import problem_media_types
from overseer_gateway.entrypoints.fast_actions import FastActions
from overseer_gateway.entrypoints.http_observation import HttpObservation
from overseer_gateway.entrypoints.limits import QueryGuard, RequestBodyGuard
from overseer_gateway.settings import GatewaySettings
from overseer_runtime.metrics import ServiceMetrics

DESCRIPTION = """\
The way people and other agents reach Overseer, a human decision firewall for AI agents.

Authenticate with `Authorization: Bearer <token>`; the dev tokens are in `OVERSEER_HOME/tokens.json`.
Roles: `viewer` < `agent`, `viewer` < `operator`, `admin` may do everything. Every error is an
`application/problem+json` document with a human-readable `detail`.

Live events: `WS /v1/ws?subjects=PATTERN&session=ID&since=SEQ` (token in `Authorization` or `?token=`)
sends `{"seq","subject","type","event"}` messages; with `since`, every matching event after SEQ first.
"""


class GatewayApp(FastAPI):
    """FastAPI whose OpenAPI document answers every error as ``application/problem+json``."""

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            document = get_openapi(
                title=self.title, version=self.version, description=self.description, routes=self.routes
            )
            self.openapi_schema = problem_media_types(document)
        return self.openapi_schema


def build_app(
    gateway: Gateway, settings: GatewaySettings, *, telemetry: bool, mcp: ASGIApp | None = None
) -> FastAPI:
    """The FastAPI application. ``telemetry``: FastAPI's own OpenTelemetry hooks, for when an exporter
    is configured; without one they only cost time (three global-provider lookups, each reading
    ``os.environ``, on every request). ``mcp``: the MCP proxy, served at ``/mcp``."""
    app = GatewayApp(
        title="Overseer gateway",
        version="1.0.0",
        description=DESCRIPTION,
        docs_url=None,  # served offline by routes_docs
        redoc_url=None,
        telemetry=None if telemetry else {"tracing": False, "metrics": False, "logs": False},
    )
    app.state.gateway = gateway
    problems.install(app)
    app.include_router(routes_views.router)
    app.include_router(routes_actions.router)
    app.include_router(routes_links.router)
    app.include_router(routes_cos.router)
    app.include_router(routes_chat.router)
    app.include_router(routes_controls.router)
    app.include_router(routes_ws.router)
    app.include_router(routes_console.router)
    routes_docs.install(app)
    app.mount("/console", routes_console.assets(), name="console")
    if mcp is not None:  # streamable HTTP: POST a message, GET the server's stream, DELETE the session
        app.router.routes.append(Route("/mcp", endpoint=mcp, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(RequestBodyGuard, max_bytes=settings.max_body_bytes, max_depth=settings.max_json_depth)
    app.add_middleware(QueryGuard)

    return app


def build_asgi(
    gateway: Gateway, app: ASGIApp, settings: GatewaySettings, metrics: ServiceMetrics | None = None
) -> ASGIApp:
    """What uvicorn serves: each request observed (a span continuing the caller's trace, and counted in
    ``metrics``, a registry of its own when none is given: :class:`HttpObservation`), writes refused
    while the bus is down (:class:`BusGuard`), then ``POST /v1/actions`` and ``GET /v1/actions/{id}``
    on a fast path, the rest (and whatever the fast path is not sure of) by ``app``."""
    fast = FastActions(
        app, gateway, max_body_bytes=settings.max_body_bytes, max_json_depth=settings.max_json_depth
    )
    return HttpObservation(BusGuard(fast, gateway.bus_connected), metrics or ServiceMetrics("gateway"))
