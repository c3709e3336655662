"""The OpenAPI document, and schemathesis against it: no 5xx, and every answer matches the document."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.gateway.gateway_support import LiveGateway

CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "ignored_auth",
    )
)


@pytest.fixture(scope="module")
def gateway_settings() -> dict[str, Any]:
    # Generated waits go up to 60 s; the gateway's own cap keeps each such request short.
    return {"max_wait_seconds": 0.5}


async def test_every_contract_path_is_documented_with_examples(gateway: LiveGateway) -> None:
    async with gateway.client() as client:
        document = (await client.get("/openapi.json")).json()
    paths = document["paths"]
    for path, method in [
        ("/healthz", "get"),
        ("/v1/actions", "post"),
        ("/v1/actions/{execution_id}", "get"),
        ("/v1/approvals", "get"),
        ("/v1/approvals/{execution_id}", "post"),
        ("/api/execution/{execution_id}/snapshot", "get"),
        ("/api/execution/{session_id}/timeline", "get"),
        ("/api/execution/topology", "get"),
        ("/v1/executions/{execution_id}/transitions", "get"),
        ("/v1/audit", "get"),
        ("/v1/audit/verify", "get"),
        ("/v1/policy", "get"),
        ("/v1/policy/admin", "put"),
        ("/v1/policy/replay", "post"),
    ]:
        assert method in paths[path], (path, method)
    schemas = document["components"]["schemas"]
    for body in ("ActionRequest", "DecisionRequest", "PolicyDocument"):
        assert schemas[body].get("examples"), body
    # A CO's transitions and an execution's (seed 002) are two models, each under a name of its own.
    cos = paths["/v1/cos/{co_id}"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    transitions = schemas[cos["$ref"].rpartition("/")[2]]["properties"]["transitions"]["items"]
    assert transitions == {"$ref": "#/components/schemas/CoTransitionRecord"}
    executions = paths["/v1/executions/{execution_id}/transitions"]["get"]["responses"]["200"]
    assert executions["content"]["application/json"]["schema"]["items"] == {
        "$ref": "#/components/schemas/TransitionRecord"
    }
    problem = paths["/v1/actions"]["post"]["responses"]["422"]["content"]
    assert list(problem) == ["application/problem+json"]


@pytest.mark.slow
async def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    gateway: LiveGateway, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        f"{gateway.url}/openapi.json",
        "--checks",
        CHECKS,
        "--max-examples",
        "50",
        "--workers",
        "1",  # several workers parse lambdas concurrently and trip a CPython 3.11 ast bug
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--seed",
        "20261122",
        "--request-timeout",
        "30",
        "--header",
        f"Authorization: Bearer {gateway.tokens['admin']}",
        "--generation-database",
        "none",
        "--report",
        "json",
        "--report-json-path",
        str(report),
        "--no-color",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    text = output.decode(errors="replace")
    assert process.returncode == 0, text[-6000:]
    result = json.loads(report.read_text())
    assert result["test_cases"]["generated"] >= 50 * result["operations"]["total"], result["test_cases"]
    assert result["test_cases"]["with_failures"] == 0
    assert result["operations"]["tested"] == result["operations"]["total"]
    assert {phase: outcome["status"] for phase, outcome in result["phases"].items()} == dict.fromkeys(
        ("examples", "coverage", "fuzzing", "stateful"), "success"
    )
