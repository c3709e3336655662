"""OpenTelemetry around handled events, with W3C trace context carried in NATS headers.

Each handled event opens a span whose parent is the ``traceparent`` header
of the message; events emitted while handling it store the current context
in their headers, and the relay publishes those headers. So one action's
spans, across every service it passes, join into one trace.

Exporters (``[telemetry] exporter``, or the standard ``OTEL_TRACES_EXPORTER``):
``otlp`` (to any OpenTelemetry collector, Jaeger or Tempo: HTTP/protobuf, or
gRPC with ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``; the endpoint, headers and
timeouts come from the standard ``OTEL_EXPORTER_OTLP_*`` variables, sampling
from ``OTEL_TRACES_SAMPLER``/``OTEL_TRACES_SAMPLER_ARG``, spans sent in
batches), ``console``, ``file`` (one JSON line per span in
``<home>/traces/<service>.jsonl``), or ``none``. With ``none`` no SDK span is
made at all (every handled message would pay for one), but the W3C context
is still carried: each handled event gets a fresh span id under the incoming
trace id, so traces stay joinable the day an exporter is switched on.
"""

from __future__ import annotations

import json
import os
import random
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_propagator = TraceContextTextMapPropagator()
_ids = random.Random()  # span and trace ids need to be unique, not secret (as in the OTel SDK)
_tracer: trace.Tracer = trace.get_tracer("overseer")
_provider: TracerProvider | None = None
# True while an exporter is configured: spans go through the OpenTelemetry SDK.
_sdk = False
EXPORTERS = ("none", "console", "file", "otlp")
# The light path's current (trace id, span id), as hex strings.
_light: ContextVar[tuple[str, str] | None] = ContextVar("overseer_trace", default=None)


class JsonLinesSpanExporter(SpanExporter):
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            ctx = span.get_span_context()
            parent = span.parent
            lines.append(
                json.dumps(
                    {
                        "name": span.name,
                        "trace_id": format(ctx.trace_id, "032x") if ctx else None,
                        "span_id": format(ctx.span_id, "016x") if ctx else None,
                        "parent_span_id": format(parent.span_id, "016x") if parent else None,
                        "service": span.resource.attributes.get("service.name"),
                        "attributes": dict(span.attributes or {}),
                        "start": span.start_time,
                        "end": span.end_time,
                    }
                )
            )
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        return SpanExportResult.SUCCESS


def otlp_exporter() -> SpanExporter:
    """The OTLP exporter ``OTEL_EXPORTER_OTLP_PROTOCOL`` names (``http/protobuf`` unless ``grpc``); each
    reads its endpoint, headers, compression and timeout from the standard ``OTEL_EXPORTER_OTLP_*``."""
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter()
    if protocol != "http/protobuf":
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' or 'grpc', not {protocol!r}")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter()


def exporter_named(configured: str) -> str:
    """The exporter in force: ``OTEL_TRACES_EXPORTER`` when set (the standard variable), else ``configured``."""
    exporter = os.environ.get("OTEL_TRACES_EXPORTER") or configured
    if exporter not in EXPORTERS:
        raise ValueError(f"telemetry exporter: one of {', '.join(EXPORTERS)}, not {exporter!r}")
    return exporter


def setup_tracing(service: str, exporter: str, home: Path) -> None:
    """Spans for ``service`` to ``exporter`` (see the module's documentation); the sampler is the
    SDK's, from ``OTEL_TRACES_SAMPLER`` (a parent's decision is followed, so a trace is whole or absent)."""
    global _tracer, _sdk, _provider
    exporter = exporter_named(exporter)
    _sdk = exporter != "none"
    if not _sdk:
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"overseer-{service}"}))
    if exporter == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    elif exporter == "file":
        provider.add_span_processor(
            SimpleSpanProcessor(JsonLinesSpanExporter(home / "traces" / f"{service}.jsonl"))
        )
    else:
        # In batches, from a thread of the SDK's own: a handled event never waits for the collector.
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter()))
    _provider = provider
    _tracer = provider.get_tracer("overseer")


def shutdown_tracing() -> None:
    """Send the spans still batched (at most a few seconds), then stop exporting."""
    global _provider, _sdk, _tracer
    if _provider is not None:
        _provider.shutdown()
    _provider = None
    _sdk = False
    _tracer = trace.get_tracer("overseer")


def _parse_traceparent(headers: Mapping[str, str] | None) -> str | None:
    value = headers.get("traceparent") if headers else None
    if value and len(value) == 55 and value[2] == "-":
        return value[3:35]
    return None


class _LightSpan:
    """The W3C context of a handled event without an SDK span: a fresh span id under the trace id.

    A plain class, not a generator: it is entered for every message a service handles.
    """

    __slots__ = ("token", "trace_id")

    def __init__(self, trace_id: str | None) -> None:
        self.trace_id = trace_id

    def __enter__(self) -> None:
        trace_id = self.trace_id or f"{_ids.getrandbits(128):032x}"
        self.token = _light.set((trace_id, f"{_ids.getrandbits(64):016x}"))

    def __exit__(self, *exc: object) -> None:
        _light.reset(self.token)


def span_for_event(
    name: str, headers: Mapping[str, str] | None, attributes: dict[str, Any]
) -> AbstractContextManager[None]:
    """A span for one handled event, child of the trace context in its headers."""
    if not _sdk:
        return _LightSpan(_parse_traceparent(headers))
    return _sdk_span_for_event(name, headers, attributes)


@contextmanager
def _sdk_span_for_event(
    name: str, headers: Mapping[str, str] | None, attributes: dict[str, Any]
) -> Iterator[None]:
    parent = _propagator.extract(carrier=dict(headers or {}))
    token = otel_context.attach(parent)
    try:
        with _tracer.start_as_current_span(name, attributes=attributes):
            yield
    finally:
        otel_context.detach(token)


def span(name: str, attributes: dict[str, Any] | None = None) -> AbstractContextManager[None]:
    if not _sdk:
        current = _light.get()
        return _LightSpan(current[0] if current else None)
    return _tracer.start_as_current_span(name, attributes=attributes or {})  # type: ignore[return-value]


def set_attribute(name: str, value: str | int | float | bool) -> None:
    """An attribute on the current span (nothing without an exporter: there is no span to hold it)."""
    if _sdk:
        trace.get_current_span().set_attribute(name, value)


def current_ids() -> tuple[str, str] | None:
    """The current (trace id, span id) as hex, for a log record; None outside any handled event or request."""
    if not _sdk:
        return _light.get()
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def current_headers() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``), for an event being emitted."""
    if not _sdk:
        current = _light.get()
        return {"traceparent": f"00-{current[0]}-{current[1]}-01"} if current else {}
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier
