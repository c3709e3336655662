"""`GET /metrics`: every service's Prometheus metrics on one page, read by a scraper with a viewer token.

A real stack (gateway, firewall, executor, observer, col, reasoning on a real nats-server); one action
goes through it, then the page must show what it did: events handled and emitted per service, the
firewall's verdict, the action's duration by tool, the HTTP request by route and status, consumer lag
and relay backlog, and every service up.
"""

from __future__ import annotations

from collections import defaultdict

from prometheus_client.parser import text_string_to_metric_families

from overseer_events.subjects import SERVICES
from overseer_runtime.testing import eventually
from tests.integration.gateway.gateway_support import LiveGateway

Samples = dict[str, list[tuple[dict[str, str], float]]]


def samples_of(text: str) -> Samples:
    found: Samples = defaultdict(list)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name].append((dict(sample.labels), sample.value))
    return found


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(v for found, v in samples.get(name, []) if all(found.get(k) == w for k, w in labels.items()))


async def test_one_action_shows_on_the_metrics_page_of_every_service_it_passed(gateway: LiveGateway) -> None:
    async with gateway.client("agent") as agent:
        proposed = await agent.post(
            "/v1/actions", json={"session_id": "metered", "tool": "fs.list", "args": {}}
        )
        assert proposed.status_code == 202, proposed.text
        execution_id = proposed.json()["execution_id"]
        done = await agent.get(f"/v1/actions/{execution_id}?wait=30&until=terminal")
        assert done.json()["consequence_label"] == "SUCCESS", done.text

    async def observed() -> Samples | None:
        # The observer, off the action's path, folds it within its burst (up to 50 ms after the end): the
        # contract's announcement (the proposal, when it came in the same burst, is not even kept).
        async with gateway.client("viewer") as viewer:
            page = await viewer.get("/metrics")
        assert page.status_code == 200, page.text
        assert page.headers["content-type"].startswith("text/plain")
        samples = samples_of(page.text)
        announced = total(
            samples, "overseer_events_handled_total", service="observer", type="execution.contract_created"
        )
        return samples if announced >= 1 else None

    samples = await eventually(observed, timeout=10)

    assert {labels["service"]: value for labels, value in samples["overseer_service_up"]} == dict.fromkeys(
        SERVICES, 1.0
    )
    assert total(samples, "overseer_events_emitted_total", service="gateway", type="execution.proposed") >= 1
    assert total(samples, "overseer_events_handled_total", service="firewall", type="execution.proposed") >= 1
    assert total(samples, "overseer_verdicts_total", service="firewall", level="AUTO", decision="allow") >= 1
    assert (
        total(samples, "overseer_tool_seconds_count", service="executor", tool="fs.list", status="completed")
        >= 1
    )
    assert (
        total(samples, "overseer_http_requests_total", route="/v1/actions", method="POST", status="202") >= 1
    )
    assert (
        total(samples, "overseer_http_requests_total", route="/v1/actions/{execution_id}", status="200") >= 1
    )
    assert {labels["service"] for labels, _ in samples["overseer_relay_backlog"]} == set(SERVICES)
    assert any(labels["service"] == "executor" for labels, _ in samples["overseer_consumer_lag"])


async def test_the_metrics_page_needs_a_token(gateway: LiveGateway) -> None:
    async with gateway.client() as anonymous:
        refused = await anonymous.get("/metrics")
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
