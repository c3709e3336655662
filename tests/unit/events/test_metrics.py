"""A service's Prometheus metrics: what the runtime counts, what the events say, and one page for many."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from overseer_events.catalogue import ContractCreated, ExecutionTransitioned, Principal, VerdictIssued
from overseer_events.envelope import Envelope, EventData, new_event
from overseer_runtime.metrics import ServiceMetrics, merge_expositions, up_exposition


def event(data: EventData, aggregate: str = "e1") -> Envelope:
    return new_event(data, aggregate_id=aggregate, aggregate_version=1, actor="test")


def transition(
    execution_id: str, to_status: str, at: float, from_status: str = "running"
) -> ExecutionTransitioned:
    return ExecutionTransitioned(
        execution_id=execution_id,
        session_id="s",
        from_status=from_status,
        to_status=to_status,
        trigger="t",
        actor="tool_node",
        timestamp=at,
    )


def value(text: str, name: str, **labels: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def created(execution_id: str, tool: str) -> ContractCreated:
    return ContractCreated(
        execution_id=execution_id,
        session_id="s",
        action_type="tool_call",
        action_detail={},
        tool=tool,
        proposer=Principal(kind="agent", id="a"),
        created_at=0.0,
    )


def test_a_tool_is_timed_from_its_last_entry_into_running_to_its_end_not_while_it_waited() -> None:
    metrics = ServiceMetrics("executor")
    steps = [
        created("mail", "email.send"),
        transition("mail", "running", 10.0, from_status="pending"),
        transition("mail", "waiting", 10.1),
        transition("mail", "running", 500.0, from_status="waiting"),  # a person approved, 490 s later
        transition("mail", "completed", 500.25),
    ]
    metrics.committed([], [event(step, "mail") for step in steps])
    text = metrics.exposition()
    assert value(text, "overseer_tool_seconds_count", tool="email.send", status="completed") == 1
    assert value(text, "overseer_tool_seconds_sum", tool="email.send") == 0.25


def test_verdicts_are_counted_by_level_and_decision_only_where_they_are_emitted() -> None:
    verdict = VerdictIssued(
        execution_id="e1", session_id="s", level="APPROVE", decision="hold", args_hash="h"
    )
    firewall, executor = ServiceMetrics("firewall"), ServiceMetrics("executor")
    firewall.committed([], [event(verdict)])
    executor.committed([event(verdict)], [])
    page = merge_expositions([firewall.exposition(), executor.exposition()])
    assert value(page, "overseer_verdicts_total", level="APPROVE", decision="hold") == 1
    assert (
        value(page, "overseer_events_handled_total", service="executor", type="firewall.verdict_issued") == 1
    )
    assert (
        value(page, "overseer_events_emitted_total", service="firewall", type="firewall.verdict_issued") == 1
    )


def test_one_page_has_each_family_once_with_every_services_samples() -> None:
    pages = []
    for service in ("firewall", "observer"):
        metrics = ServiceMetrics(service)
        metrics.observe({"main": 3}, relay_backlog=2)
        pages.append(metrics.exposition())
    page = merge_expositions([*pages, up_exposition({"firewall": True, "observer": True, "col": False})])
    assert page.count("# TYPE overseer_consumer_lag gauge") == 1
    assert value(page, "overseer_consumer_lag", service="observer", consumer="main") == 3
    assert value(page, "overseer_relay_backlog") == 4
    assert value(page, "overseer_service_up", service="col") == 0


def test_a_start_told_with_its_end_times_the_tool_from_that_start() -> None:
    metrics = ServiceMetrics("executor")
    start = transition("mail", "running", 500.0, from_status="waiting")
    end = transition("mail", "completed", 500.5).model_copy(update={"earlier": [start]})
    steps = [created("mail", "email.send"), transition("mail", "running", 10.0, from_status="pending")]
    steps += [transition("mail", "waiting", 10.1), end]
    metrics.committed([], [event(step, "mail") for step in steps])
    text = metrics.exposition()
    assert value(text, "overseer_tool_seconds_count", tool="email.send", status="completed") == 1
    assert value(text, "overseer_tool_seconds_sum", tool="email.send") == 0.5


def test_events_of_one_type_counted_in_several_commits_add_up_in_one_series_per_type() -> None:
    metrics = ServiceMetrics("observer")
    moved, other = event(transition("e1", "completed", 2.0)), event(transition("e2", "failed", 3.0))
    metrics.committed([moved], [])
    metrics.committed([other, moved], [])
    metrics.committed([event(created("e3", "fs.list"))], [])
    page = metrics.exposition()
    assert value(page, "overseer_events_handled_total", type="execution.transitioned") == 3
    assert value(page, "overseer_events_handled_total", type="execution.contract_created") == 1
    series = [
        sample.labels
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == "overseer_events_handled_total"
    ]
    assert len(series) == 2
