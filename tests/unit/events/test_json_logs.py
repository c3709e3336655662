"""Logs as JSON on request: one object per record, with the service and the trace of what is handled."""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = """
import logging
from overseer_runtime import tracing
from overseer_runtime.config import load_settings
from overseer_runtime.main import configure_logging

configure_logging(load_settings(), "firewall")
headers = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
with tracing.span_for_event("firewall handle x", headers, {}):
    logging.getLogger("overseer.firewall").warning("held %s", "email.send")
logging.getLogger("overseer.firewall").warning("outside")
"""


def logged(**env: str) -> list[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OVERSEER_")} | env
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr.strip().splitlines()


def test_with_overseer_log_format_json_each_record_is_an_object_with_the_trace_it_belongs_to() -> None:
    inside, outside = (json.loads(line) for line in logged(OVERSEER_LOG_FORMAT="json"))
    assert inside["message"] == "held email.send"
    assert (inside["service"], inside["level"], inside["logger"]) == (
        "firewall",
        "WARNING",
        "overseer.firewall",
    )
    assert inside["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert len(inside["span_id"]) == 16
    assert outside["trace_id"] is None


def test_by_default_records_are_lines_of_text() -> None:
    [line, _] = logged()
    assert "firewall WARNING overseer.firewall: held email.send" in line
