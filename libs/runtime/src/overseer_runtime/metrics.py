"""Prometheus metrics of one service process, every series labelled with the service.

What every service has, counted by the runtime: events handled and emitted (by type), dead letters,
and, read when scraped, its consumers' lag and its relay's backlog. What the events say, counted by the
service that emits them (so nothing is counted twice across the cluster): the firewall's verdicts by
level and decision and the people's approval latency (from ``firewall.verdict_issued`` and
``human.decision_recorded``), and how long each tool ran (from the executor's own transitions: RUNNING
to its end, so a held action's wait for a person is not counted). A service adds its own to
:attr:`ServiceMetrics.registry` (the gateway: HTTP requests by route and status).

Each process answers its exposition over the RPC method ``metrics``; the gateway's ``GET /metrics``
merges every service's into one page (:func:`merge_expositions`), so one scrape sees the cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from overseer_events.catalogue import (
    ContractCreated,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    VerdictIssued,
)
from overseer_events.envelope import Envelope, EventData

M = TypeVar("M", Counter, Histogram)


class Series(Generic[M]):
    """A metric's series by their label values, each looked up once: what is counted for every event or
    request asks for its series each time, and ``labels`` builds the key and takes the metric's lock on
    every call. ``fixed`` are the leading label values every series of it shares (the service); a call
    names the rest. Holds no more series than the metric itself does."""

    def __init__(self, metric: M, *fixed: str) -> None:
        self.metric: M = metric
        self.fixed = fixed
        self._known: dict[tuple[str, ...], M] = {}

    def __call__(self, *values: str) -> M:
        series = self._known.get(values)
        if series is None:
            series = self._known[values] = self.metric.labels(*self.fixed, *values)
        return series


# A person's answer takes seconds to hours; a tool, milliseconds to minutes.
APPROVAL_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)
TOOL_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0)
TERMINAL = frozenset({"completed", "failed", "rejected", "cancelled"})


class ServiceMetrics:
    """One service's metrics, in a registry of its own (several services may share a test process)."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.registry = CollectorRegistry()
        registry = self.registry
        self.handled = Counter(
            "overseer_events_handled",
            "Events the service handled, by type",
            ["service", "type"],
            registry=registry,
        )
        self.emitted = Counter(
            "overseer_events_emitted",
            "Events the service emitted, by type",
            ["service", "type"],
            registry=registry,
        )
        self.dead_letters = Counter(
            "overseer_dead_letters", "Events the service could not take, sent to the dead-letter stream",
            ["service"], registry=registry,
        )  # fmt: skip
        self.consumer_lag = Gauge(
            "overseer_consumer_lag", "Events delivered to the service but not yet acknowledged, by consumer",
            ["service", "consumer"], registry=registry,
        )  # fmt: skip
        self.relay_backlog = Gauge(
            "overseer_relay_backlog", "Events the service committed but has not yet published", ["service"],
            registry=registry,
        )  # fmt: skip
        self.verdicts = Counter(
            "overseer_verdicts", "The firewall's verdicts, by permission level and decision",
            ["service", "level", "decision"], registry=registry,
        )  # fmt: skip
        self.approval_latency = Histogram(
            "overseer_approval_latency_seconds", "How long people took to answer a held action, by decision",
            ["service", "decision"], buckets=APPROVAL_BUCKETS, registry=registry,
        )  # fmt: skip
        self.tool_seconds = Histogram(
            "overseer_tool_seconds", "How long tools ran (RUNNING to the end), by tool and outcome",
            ["service", "tool", "status"], buckets=TOOL_BUCKETS, registry=registry,
        )  # fmt: skip
        self._handled_of, self._emitted_of = Series(self.handled, service), Series(self.emitted, service)
        self._verdicts_of = Series(self.verdicts, service)
        self._approval_latency_of = Series(self.approval_latency, service)
        self._tool_seconds_of = Series(self.tool_seconds, service)
        self._derived: Mapping[type[EventData], Callable[[Any], None]] = {
            VerdictIssued: self._verdict,
            HumanDecisionRecorded: self._decision,
            ContractCreated: self._created,
            ExecutionTransitioned: self._transitioned,
        }
        # The executor's contracts under way: each one's tool, and when it last entered RUNNING. Only
        # metrics: a restart forgets them, and the tools then running are not timed.
        self._tools: dict[str, str] = {}
        self._running_since: dict[str, float] = {}

    # -- what the runtime reports --------------------------------------------------------------
    def committed(self, handled: Iterable[Envelope], emitted: Iterable[Envelope]) -> None:
        """Events a commit took in and put out."""
        for event in handled:
            self._handled_of(event.type).inc()
        for event in emitted:
            self._emitted_of(event.type).inc()
            derive = self._derived.get(type(event.data))
            if derive is not None:
                derive(event.data)

    def dead_lettered(self) -> None:
        self.dead_letters.labels(self.service).inc()

    def observe(self, consumers: Mapping[str, int | None], relay_backlog: int) -> None:
        """The state read when scraped: each consumer's lag, the relay's backlog."""
        for consumer, lag in consumers.items():
            self.consumer_lag.labels(self.service, consumer).set(lag or 0)
        self.relay_backlog.labels(self.service).set(relay_backlog)

    def exposition(self) -> str:
        """The Prometheus text exposition of everything above."""
        return generate_latest(self.registry).decode()

    # -- what the events say -----------------------------------------------------------------
    def _verdict(self, data: VerdictIssued) -> None:
        self._verdicts_of(data.level, data.decision).inc()

    def _decision(self, data: HumanDecisionRecorded) -> None:
        if data.latency_ms is not None:
            self._approval_latency_of(data.decision).observe(data.latency_ms / 1000)

    def _created(self, data: ContractCreated) -> None:
        self._tools[data.execution_id] = data.tool or data.action_type
        for moved in data.transitions:  # the moves it made at once (a started call entered RUNNING)
            self._moved(moved)

    def _transitioned(self, data: ExecutionTransitioned) -> None:
        for moved in data.moves():  # a call's start, held back, comes first when told with its end
            self._moved(moved)

    def _moved(self, data: ExecutionTransitioned) -> None:
        execution_id = data.execution_id
        if data.to_status == "running":
            self._running_since[execution_id] = data.timestamp
            return
        started = self._running_since.pop(execution_id, None)
        if data.to_status not in TERMINAL:
            return
        tool = self._tools.pop(execution_id, None)
        if started is not None and tool is not None and data.from_status == "running":
            self._tool_seconds_of(tool, data.to_status).observe(max(0.0, data.timestamp - started))


class _Families:
    """A collector that yields metric families already read (what :func:`merge_expositions` builds)."""

    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def merge_expositions(texts: Iterable[str]) -> str:
    """Several processes' expositions as one page: a family's samples from each, its help and type once."""
    families: dict[str, Metric] = {}
    for text in texts:
        for family in text_string_to_metric_families(text):
            merged = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            merged.samples.extend(family.samples)
    registry = CollectorRegistry()
    registry.register(_Families(list(families.values())))
    return generate_latest(registry).decode()


def up_exposition(answered: Mapping[str, bool]) -> str:
    """``overseer_service_up``: 1 for each service whose metrics were read, 0 for one that did not answer."""
    registry = CollectorRegistry()
    up = Gauge(
        "overseer_service_up", "Whether the service answered for its metrics", ["service"], registry=registry
    )
    for service, ok in answered.items():
        up.labels(service).set(1 if ok else 0)
    return generate_latest(registry).decode()
