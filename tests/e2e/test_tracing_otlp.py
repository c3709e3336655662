"""Traces to a real OTLP receiver: the stack started as processes by `overseer up` with the standard
``OTEL_*`` variables exports its spans over OTLP (HTTP/protobuf, and gRPC), and one action is one trace,
continued from the caller's ``traceparent``, across at least four services."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import (
    TraceServiceServicer,
    add_TraceServiceServicer_to_server,
)

from overseer_runtime.launcher import free_port

pytestmark = pytest.mark.slow

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


class Received:
    """The spans a receiver got: (trace id, the service that sent it, span name)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def take(self, request: ExportTraceServiceRequest) -> None:
        with self.lock:
            for resource_spans in request.resource_spans:
                attributes = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                service = attributes.get("service.name", "?")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append((span.trace_id.hex(), service, span.name))

    def services_in(self, trace_id: str) -> set[str]:
        with self.lock:
            return {service for tid, service, _ in self.spans if tid == trace_id}


@contextmanager
def http_receiver(received: Received) -> Iterator[str]:
    """An OTLP/HTTP receiver (``POST /v1/traces``, protobuf) on a free port: its endpoint."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/traces":
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                received.take(request)
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


@contextmanager
def grpc_receiver(received: Received) -> Iterator[str]:
    """An OTLP/gRPC receiver (the collector's TraceService) on a free port: its endpoint."""

    class Service(TraceServiceServicer):
        def Export(
            self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
        ) -> ExportTraceServiceResponse:
            received.take(request)
            return ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_one_action_is_one_trace_across_the_services_exported_over_otlp(
    tmp_path: Path, protocol: str
) -> None:
    received = Received()
    receiver = http_receiver if protocol == "http/protobuf" else grpc_receiver
    with receiver(received) as endpoint:
        home = tmp_path / "home"
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_", "OTEL_"))}
        env |= {
            "OVERSEER_HOME": str(home),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "200",  # milliseconds between batches
        }
        overseer = Path(sys.executable).with_name("overseer")
        stack = subprocess.Popen(
            [str(overseer), "up", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                assert stack.poll() is None, stack.stdout.read() if stack.stdout else ""
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
            token = json.loads((home / "tokens.json").read_text())["agent"]
            headers = {
                "Authorization": f"Bearer {token}",
                "traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01",
            }
            proposed = httpx.post(
                f"{url}/v1/actions",
                json={"session_id": "traced", "tool": "fs.list", "args": {}},
                headers=headers,
                timeout=30,
            )
            assert proposed.status_code == 202, proposed.text
            execution_id = proposed.json()["execution_id"]
            done = httpx.get(
                f"{url}/v1/actions/{execution_id}?wait=30&until=terminal",
                headers={"Authorization": f"Bearer {token}"},
                timeout=40,
            )
            assert done.json()["consequence_label"] == "SUCCESS", done.text

            deadline = time.monotonic() + 30
            while len(received.services_in(TRACE_ID)) < 4 and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            stack.send_signal(signal.SIGINT)
            stack.communicate(timeout=60)
    services = received.services_in(TRACE_ID)
    assert {"overseer-gateway", "overseer-firewall", "overseer-executor", "overseer-observer"} <= services, (
        services,
        received.spans[:20],
    )
