"""Benchmarks ``pipeline_auto`` and ``pipeline_approval``: actions through the gateway's REST API, end to end.

A real stack: an embedded nats-server with JetStream (file storage) and the six services, each its own
process with its own SQLite file. An external agent (a lean keep-alive client) proposes an action and
waits for its outcome in the same request (``POST /v1/actions?wait=…``, as a synchronous agent does);
one action is measured from the POST to the answer that says it is done.

* ``pipeline_auto``: ``fs.list`` (AUTO): proposed, judged, run, observed.
* ``pipeline_approval``: ``fs.write`` made CONFIRM through ``PUT /v1/policy/admin``; an automatic operator
  client watches the WebSocket for ``ecs.requested`` and approves each card over REST with its
  ``args_hash``; the agent waits for the terminal state (``until=terminal``).
* ``pipeline_timeline``: ``pipeline_auto`` at concurrency 1, each action's way through the stack in steps
  (medians): from the request to the proposal's event, to the stream storing it, to the firewall's
  verdict, to the stream storing that, to the executor starting the call, the call, its end written
  into the contract's announcement, to the stream storing that, and on to the answer in the agent's
  hands. The times are the events' own (``occurred_at``, the moves' ``timestamp``) and the stream's
  (``Nats-Time-Stamp`` of its announcement of each event), all read from one machine's clock.
* ``pipeline_approval_timeline``: ``pipeline_approval`` at concurrency 1 in steps, the same way: the
  proposal, the verdict (hold), the executor's approval card, the card reaching the operator over the
  WebSocket and its decision sent, the gateway's ``human.responded``, the firewall's recorded decision,
  the executor's start of the call, its end, and the answer.
* ``pipeline_replicas``: ``pipeline_auto`` at ``--concurrency`` with one process of each service, with
  two executor replicas sharing the work (``[partitions] executor = 2``) and with two firewall
  replicas (``[partitions] firewall = 2``), alternated; medians, and each against one process.

Each scenario but the timelines runs at concurrency 1 and at ``--concurrency`` (default 32), printing one
JSON line each:
``{"scenario":"pipeline_auto","actions":N,"concurrency":C,"actions_per_s":…,"p50_ms":…,"p99_ms":…}``.
The same scenarios run in LangGraph (``bench/peers/langgraph_pipeline.py``) in the same process, in
rounds that alternate with Overseer's (a round of Overseer, a round of LangGraph, …: the machine's
drift from one second to the next meets both alike); each side's line pools its rounds, and one ratio
line per scenario and concurrency compares them (actions per second, and both p50s).

    python bench/pipeline.py [pipeline_auto] [pipeline_approval] [pipeline_timeline]
                             [pipeline_approval_timeline] [pipeline_replicas]
                             [--no-peers] [--quick]
                             [--profile DIR [--profiler pyinstrument|cprofile|sql]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_per_action, cpu_seconds, drive, emit, event_loop_runner, latency_summary  # noqa: E402
from bench.lean_http import LeanClient  # noqa: E402
from overseer_cli.supervisor import provision_stack  # noqa: E402
from overseer_events.machines.execution import is_terminal  # noqa: E402
from overseer_events.subjects import Subjects  # noqa: E402
from overseer_gateway.adapters.tokens import ensure_tokens_file  # noqa: E402
from overseer_runtime.bus import connect  # noqa: E402
from overseer_runtime.config import load_settings  # noqa: E402
from overseer_runtime.launcher import EmbeddedNats, free_port  # noqa: E402
from overseer_runtime.partitions import instances  # noqa: E402
from overseer_runtime.permissions import PROVISIONER  # noqa: E402
from overseer_runtime.sql_profile import PROFILE_ENV  # noqa: E402

SERVICES = ("observer", "col", "firewall", "executor", "reasoning", "gateway")
SCENARIOS = (
    "pipeline_auto",
    "pipeline_approval",
    "pipeline_timeline",
    "pipeline_approval_timeline",
    "pipeline_replicas",
)
PEERED = ("pipeline_auto", "pipeline_approval")  # the scenarios LangGraph runs too

if TYPE_CHECKING:
    from bench.peers.langgraph_pipeline import LangGraphPipeline


def note(text: str) -> None:
    print(f"[pipeline] {text}", file=sys.stderr, flush=True)


def summary(scenario: str, latencies: list[float], elapsed: float, concurrency: int) -> dict[str, Any]:
    summary = latency_summary(latencies, elapsed)
    return {"scenario": scenario, "actions": summary.pop("actions"), "concurrency": concurrency, **summary}


# How each profiler runs a service: the interpreter's arguments before ``-m overseer_<service>`` and the
# environment it adds, writing its report to ``base.*``: pyinstrument samples (wall time, a readable tree);
# cProfile counts every call (``pstats`` reads it); sql counts the CPU time of each statement the service's
# store runs (``overseer_runtime.sql_profile``: ``base-<pid>.txt``, read as text).
PROFILERS: dict[str, Callable[[Path], tuple[list[str], dict[str, str]]]] = {
    "pyinstrument": lambda base: (["-m", "pyinstrument", "-r", "text", "-o", f"{base}.txt"], {}),
    "cprofile": lambda base: (["-m", "cProfile", "-o", f"{base}.prof"], {}),
    "sql": lambda base: ([], {PROFILE_ENV: str(base.parent)}),
}


class LocalStack:
    """NATS and the six services (or those named in ``services``) as child processes under a temporary
    OVERSEER_HOME (``partitions``: the replicas of a service running as several, each running one
    partition of the work; ``launcher``: a command each service's interpreter runs under, with the
    environment it adds, such as valgrind's)."""

    def __init__(
        self,
        home: Path,
        profile: Path | None = None,
        partitions: dict[str, int] | None = None,
        profiler: str = "pyinstrument",
        services: tuple[str, ...] = SERVICES,
        launcher: tuple[list[str], dict[str, str]] = ([], {}),
    ) -> None:
        self.home = home
        self.services = services
        self.launcher = launcher
        self.profiler = profiler
        self.port = free_port()
        self.nats = EmbeddedNats(home)
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.profile = profile
        self.partitions = partitions or {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self.nats.start()
        settings = load_settings(env={"OVERSEER_HOME": str(self.home)})
        await provision_stack(
            self.nats.url, self.nats.credential(PROVISIONER), Subjects(), settings.nats, self.partitions
        )
        self.spawn_services()

    def spawn_services(self) -> None:
        self.tokens = ensure_tokens_file(self.home)
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
        base |= {
            "OVERSEER_HOME": str(self.home),
            "OVERSEER_GATEWAY__PORT": str(self.port),
            "OVERSEER_OVERSEER__LOG_LEVEL": "WARNING",
            "OVERSEER_MCP__SERVERS__TIME__ENABLED": "false",  # not used here; saves a process
            **{f"OVERSEER_PARTITIONS__{s.upper()}": str(n) for s, n in self.partitions.items()},
            "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        }
        for service, (name, partition) in [
            (s, i) for s in self.services for i in instances(s, self.partitions)
        ]:
            wrapper: list[str] = []
            profiled: dict[str, str] = {}
            if self.profile is not None:
                self.profile.mkdir(parents=True, exist_ok=True)
                wrapper, profiled = PROFILERS[self.profiler](self.profile / name)
            prefix, launched = self.launcher
            self.children[name] = subprocess.Popen(
                [*prefix, sys.executable, *wrapper, "-m", f"overseer_{service}"],
                env=base | self.nats.env_for(service) | partition | profiled | launched,
                stdout=(logs / f"{name}.log").open("ab"),
                stderr=subprocess.STDOUT,
                cwd=self.home,
            )

    async def wait_healthy(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as client:
            while time.monotonic() < deadline:
                for name, child in self.children.items():
                    if child.poll() is not None:
                        raise RuntimeError(
                            f"{name} exited with {child.returncode}; see {self.home}/logs/{name}.log"
                        )
                try:
                    response = await client.get("/healthz")
                    if response.status_code == 200:
                        return
                    last = response.text
                except httpx.HTTPError as exc:
                    last = repr(exc)
                await asyncio.sleep(0.2)
        raise TimeoutError(f"the stack did not become healthy: {last}")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) used so far by each service and by nats-server (Linux /proc)."""
        pids = {name: child.pid for name, child in self.children.items()}
        if self.nats.process is not None:
            pids["nats-server"] = self.nats.process.pid
        return cpu_seconds(pids)

    def stop(self) -> None:
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGINT if self.profile else signal.SIGTERM)
        for child in self.children.values():
            try:
                child.wait(20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self.nats.stop()


def lean_client(stack: LocalStack, role: str, concurrency: int) -> LeanClient:
    """The load generator's client for the measured requests (see bench/lean_http.py)."""
    return LeanClient(stack.url, stack.tokens[role], pool=concurrency + 4)


def client(stack: LocalStack, role: str, concurrency: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=concurrency + 4, max_keepalive_connections=concurrency + 4)
    return httpx.AsyncClient(
        base_url=stack.url,
        headers={"Authorization": f"Bearer {stack.tokens[role]}"},
        timeout=60.0,
        limits=limits,
    )


async def proposed_and_settled(agent: LeanClient, proposal: dict[str, Any], wait: dict[str, Any]) -> Any:
    """Propose and wait in one request; should the gateway answer the id alone (202: the outcome was not
    known in time), ask for the outcome."""
    response = await agent.post("/v1/actions", json=proposal, params=wait)
    if response.status_code == 202:
        response = await agent.get(f"/v1/actions/{response.json()['execution_id']}", params=wait)
    if response.status_code != 200:
        raise RuntimeError(f"the proposal was answered {response.status_code}: {response.content!r}")
    return response.json()


class AutoScenario:
    name = "pipeline_auto"
    wait: dict[str, Any] = {"wait": 30}  # the agent proposes and waits in one request

    def __init__(self, stack: LocalStack, concurrency: int, run_id: str) -> None:
        self.agent = lean_client(stack, "agent", concurrency)
        self.run_id = run_id

    async def start(self) -> None:
        """Nothing runs beside the agent: an AUTO action needs no person."""

    def proposal(self, i: int) -> dict[str, Any]:
        # One session per action: the firewall's loop detection would (rightly) hold a session that
        # lists the same directory thousands of times.
        return {"session_id": f"{self.run_id}-{i}", "tool": "fs.list", "args": {"path": "."}}

    async def one(self, i: int) -> float:
        started = time.perf_counter()
        view = await proposed_and_settled(self.agent, self.proposal(i), self.wait)
        elapsed = time.perf_counter() - started
        if view.get("consequence_label") != "SUCCESS":
            raise RuntimeError(f"fs.list did not succeed: {view}")
        return elapsed

    async def close(self) -> None:
        await self.agent.aclose()


class ApprovalScenario:
    name = "pipeline_approval"
    wait: dict[str, Any] = {"wait": 30, "until": "terminal"}  # past the approval, to the call's end

    def __init__(self, stack: LocalStack, concurrency: int, run_id: str) -> None:
        self.stack = stack
        self.agent = lean_client(stack, "agent", concurrency)
        self.operator = lean_client(stack, "operator", concurrency)
        self.run_id = run_id
        self.approver: asyncio.Task[None] | None = None
        self.decisions: set[asyncio.Task[Any]] = set()
        self.approved = 0
        self.decided: dict[str, float] = {}  # execution id -> when its decision was sent (time.time())

    async def start(self) -> None:
        """The automatic operator: every approval card that appears on the stream is approved over REST."""
        from websockets.asyncio.client import connect

        url = self.stack.url.replace("http://", "ws://") + "/v1/ws?subjects=ecs.requested"
        headers = {"Authorization": f"Bearer {self.stack.tokens['operator']}"}
        ready = asyncio.Event()

        async def approve(card: dict[str, Any]) -> None:
            self.decided[card["execution_id"]] = time.time()
            response = await self.operator.post(
                f"/v1/approvals/{card['execution_id']}",
                json={"decision": "approve", "args_hash": card["args_hash"]},
            )
            if response.status_code != 200:
                raise RuntimeError(f"approval refused: {response.text}")
            self.approved += 1

        async def watch() -> None:
            async with connect(url, additional_headers=headers, max_size=None) as ws:
                ready.set()
                async for raw in ws:
                    card = orjson.loads(raw)["event"]["data"]
                    if card.get("kind") == "approval":
                        task = asyncio.create_task(approve(card))
                        self.decisions.add(task)
                        task.add_done_callback(self.decisions.discard)

        self.approver = asyncio.create_task(watch())
        await asyncio.wait_for(ready.wait(), 10)

    def proposal(self, i: int) -> dict[str, Any]:
        return {
            "session_id": f"{self.run_id}-{i}",
            "tool": "fs.write",
            "args": {"path": f"bench/{self.run_id}-{i}.txt", "content": f"action {i}\n"},
        }

    async def one(self, i: int) -> float:
        started = time.perf_counter()
        view = await proposed_and_settled(self.agent, self.proposal(i), self.wait)
        elapsed = time.perf_counter() - started
        if view.get("consequence_label") != "SUCCESS" or not view.get("was_suspended"):
            raise RuntimeError(f"fs.write did not succeed after an approval: {view}")
        return elapsed

    async def close(self) -> None:
        if self.approver is not None:
            self.approver.cancel()
        await self.agent.aclose()
        await self.operator.aclose()


async def make_fs_write_confirm(stack: LocalStack) -> None:
    """The admin layer through the API, as an administrator would: fs.write becomes CONFIRM."""
    async with client(stack, "admin", 1) as admin:
        policy = (await admin.get("/v1/policy")).json()
        layer = {k: v for k, v in policy["admin"].items() if k != "version"}
        layer["defaults"] = {**layer.get("defaults", {}), "fs.write": "CONFIRM"}
        response = await admin.put("/v1/policy/admin", json=layer)
        response.raise_for_status()
        if response.json()["tools"]["fs.write"]["effective"] != "CONFIRM":
            raise RuntimeError("fs.write did not become CONFIRM")


class BusCounts:
    """Messages stored in the events stream so far, and deliveries to every durable consumer of it (each
    delivery of a message to a service's consumer counts, redeliveries too), over one connection."""

    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.nc: Client | None = None

    async def __aenter__(self) -> BusCounts:
        nats = self.stack.nats
        self.nc = await connect(nats.url, name="bench-bus", credential=nats.credential(PROVISIONER))
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.nc is not None:
            await self.nc.close()

    async def now(self) -> tuple[int, int]:
        assert self.nc is not None
        js = self.nc.jetstream()
        stream = Subjects().events_stream
        info = await js.stream_info(stream)
        consumers = await js.consumers_info(stream)
        delivered = sum(int(c.delivered.consumer_seq or 0) for c in consumers if c.delivered is not None)
        return int(info.state.messages), delivered

    async def settled(self) -> tuple[int, int]:
        """The counts once they stop growing (0.5 s without a new message or delivery): what the last
        actions publish after their answer (the observer's and the firewall's follow-ups) lands then."""
        counts = await self.now()
        while True:
            await asyncio.sleep(0.5)
            again = await self.now()
            if again == counts:
                return counts
            counts = again


def bus_line(scenario: str, concurrency: int, count: int, published: int, delivered: int) -> dict[str, Any]:
    """Events published and consumer deliveries per action: what one action costs the bus."""
    return {
        "scenario": "pipeline_bus",
        "for": scenario,
        "concurrency": concurrency,
        "actions": count,
        "events_per_action": round(published / count, 2),
        "deliveries_per_action": round(delivered / count, 2),
    }


def ratio_line(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    return {
        "scenario": f"ratio_{ours['scenario']}_vs_langgraph",
        "concurrency": ours["concurrency"],
        "overseer_actions_per_s": ours["actions_per_s"],
        "langgraph_actions_per_s": theirs["actions_per_s"],
        "ratio": round(ours["actions_per_s"] / theirs["actions_per_s"], 2),
        "overseer_p50_ms": ours["p50_ms"],
        "langgraph_p50_ms": theirs["p50_ms"],
    }


@dataclass
class Rounds:
    """What one side's rounds add up to: every action's latency and the wall time they took."""

    latencies: list[float] = field(default_factory=list)
    elapsed: float = 0.0

    def add(self, latencies: list[float], elapsed: float) -> None:
        self.latencies += latencies
        self.elapsed += elapsed


def rounds_at(concurrency: int) -> int:
    """Rounds per side: many short ones at concurrency 1, where an action takes milliseconds and the
    machine's speed moves within seconds; two at high concurrency, where each round ends with a tail of
    fewer actions in flight than workers (a cost both sides pay alike, but not to be paid often)."""
    return 5 if concurrency == 1 else 2


async def measure(
    stack: LocalStack,
    scenario_cls: type[AutoScenario] | type[ApprovalScenario],
    count: int,
    concurrency: int,
    peer: LangGraphPipeline | None,
) -> list[dict[str, Any]]:
    """``count`` actions at ``concurrency`` in rounds, each of Overseer's followed by one of the peer's
    (``peer``; None: Overseer alone): Overseer's line, its bus line, and the peer's and the ratio."""
    run_id = f"{scenario_cls.name}-c{concurrency}-{time.time_ns() % 10**9}"
    scenario = scenario_cls(stack, concurrency, run_id)
    ours, theirs = Rounds(), Rounds()
    spent: dict[str, float] = {}
    published = delivered = 0
    per_round = count // rounds_at(concurrency)

    async def numbered(i: int, first: int) -> float:  # the round's i-th action: the run's (first + i)-th
        return await scenario.one(first + i)

    await scenario.start()
    try:
        warmup = max(20, concurrency * 4)
        await drive(warmup, concurrency, lambda i: scenario.one(10**6 + i))
        if peer is not None:
            await asyncio.to_thread(peer.warm_up, scenario_cls.name, concurrency, run_id)
        async with BusCounts(stack) as bus:
            for first in range(0, per_round * rounds_at(concurrency), per_round):
                bus_before = await bus.now()
                before = stack.cpu_seconds()
                ours.add(*await drive(per_round, concurrency, functools.partial(numbered, first=first)))
                after = stack.cpu_seconds()
                bus_after = await bus.settled()  # the stack's follow-ups land before the peer's round
                spent = {name: spent.get(name, 0.0) + after[name] - before.get(name, 0.0) for name in after}
                published += bus_after[0] - bus_before[0]
                delivered += bus_after[1] - bus_before[1]
                if peer is not None:
                    theirs.add(
                        *await asyncio.to_thread(
                            peer.run, scenario_cls.name, per_round, concurrency, run_id, first
                        )
                    )
    finally:
        await scenario.close()
    done = len(ours.latencies)
    # Where the CPU goes, per action (stderr: the JSON lines on stdout stay the contract's).
    note(f"{scenario_cls.name} c={concurrency}: {cpu_per_action({}, spent, done, ours.elapsed)}")
    lines = [
        summary(scenario_cls.name, ours.latencies, ours.elapsed, concurrency),
        bus_line(scenario_cls.name, concurrency, done, published, delivered),
    ]
    if peer is not None:
        lines.append(
            summary(f"peer_langgraph_{scenario_cls.name}", theirs.latencies, theirs.elapsed, concurrency)
        )
        lines.append(ratio_line(lines[0], lines[-1]))
    return lines


COUNTS = {  # (concurrency 1, high concurrency) actions per scenario
    "pipeline_auto": (300, 2000),
    "pipeline_approval": (200, 1000),
}


async def run_pipelines(
    scenarios: list[str],
    concurrency: int,
    quick: bool,
    profile: Path | None,
    keep: bool = False,
    profiler: str = "pyinstrument",
    peers: bool = True,
) -> None:
    """The peered scenarios on one stack, each at concurrency 1 and ``concurrency``, with LangGraph's
    rounds between Overseer's (``peers``); every line emitted as it is known."""
    home = Path(tempfile.mkdtemp(prefix="overseer-bench-"))
    stack = LocalStack(home, profile, profiler=profiler)
    try:
        await stack.start()
        await stack.wait_healthy()
        note(f"stack up under {home}")
        if "pipeline_approval" in scenarios:
            await make_fs_write_confirm(stack)
        classes: dict[str, type[AutoScenario] | type[ApprovalScenario]] = {
            "pipeline_auto": AutoScenario,
            "pipeline_approval": ApprovalScenario,
        }
        if peers:  # LangGraph is imported only when its rounds run
            from bench.peers.langgraph_pipeline import LangGraphPipeline
        with LangGraphPipeline() if peers else contextlib.nullcontext() as peer:
            for name in scenarios:
                low, high = COUNTS[name]
                if quick:
                    low, high = low // 5, high // 5
                for c, n in ((1, low), (concurrency, high)):
                    for line in await measure(stack, classes[name], n, c, peer):
                        emit(line)
    finally:
        stack.stop()
        if profile is None and not keep:
            shutil.rmtree(home, ignore_errors=True)
        else:
            note(f"stack home kept at {home}" + (f"; profiles in {profile}" if profile else ""))


def stream_time(stamp: str) -> float:
    """A JetStream ``Nats-Time-Stamp`` (RFC 3339 in UTC, to the nanosecond) as seconds since the epoch."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp() + float(f"0.{fraction or 0}")


# The steps of an AUTO action, each from one point in time to the next (see ``auto_points``).
TIMELINE_STEPS = (
    "request_to_proposal",  # the gateway read the request and made the proposal's event
    "proposal_to_stream",  # its commit, the relay's publish, the stream storing it
    "stream_to_verdict",  # delivery to the firewall, which decoded, recorded and judged it
    "verdict_to_stream",  # the audit records, the verdict's append and commit, its publish and storage
    "stream_to_start",  # delivery to the executor, the call run ahead, the transaction up to its start
    "call",  # the tool's run, as the moves record it
    "end_to_contract",  # the end written into the contract's announcement
    "contract_to_stream",  # the executor's commit and publish (the answer leaves in the same write)
    "stream_to_answer",  # the answer on its way to the gateway, and the HTTP response to the agent
)

# The steps of an action held for a person and approved (see ``approval_points``).
APPROVAL_TIMELINE_STEPS = (
    "request_to_proposal",  # the gateway read the request and made the proposal's event
    "proposal_to_stream",  # its commit, the relay's publish, the stream storing it
    "stream_to_verdict",  # delivery to the firewall, which judged it: hold
    "verdict_to_stream",  # its commit, publish and storage
    "stream_to_card",  # delivery to the executor, the contract made WAITING with its approval card
    "card_to_stream",  # the executor's commit, publish and storage
    "card_to_operator",  # the card over the WebSocket to the operator, whose client sends the decision
    "operator_to_response",  # the gateway read the decision, checked the card, made human.responded
    "response_to_stream",  # its commit, publish and storage
    "stream_to_decision",  # delivery to the firewall, which recorded the decision
    "decision_to_stream",  # its commit, publish and storage
    "stream_to_start",  # delivery to the executor, the transaction up to the call's start
    "start_to_end",  # the start's commit and publish, the call, the transaction up to its end
    "end_to_stream",  # the executor's commit, publish and storage
    "stream_to_answer",  # the answer on its way to the gateway, and the HTTP response to the agent
)

Seen = dict[str, list[tuple[dict[str, Any], float]]]
"""One action's announced events by type, in the order announced: each event and when the stream stored it."""


class Timeline:
    """The stream's announcements of each action's events, with the time the stream stored each; over
    the gateway's credential (only the gateway may follow the announcements)."""

    def __init__(self, stack: LocalStack, types: tuple[str, ...]) -> None:
        self.stack = stack
        self.types = types
        self.nc: Client | None = None
        self.seen: dict[str, Seen] = {}

    async def __aenter__(self) -> Timeline:
        nats = self.stack.nats
        self.nc = await connect(nats.url, name="bench-timeline", credential=nats.credential("gateway"))
        await self.nc.subscribe(Subjects().live, cb=self._announced)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.nc is not None:
            await self.nc.close()

    async def _announced(self, msg: Msg) -> None:
        event = orjson.loads(msg.data)
        stamp = (msg.headers or {}).get("Nats-Time-Stamp")
        if event.get("type") in self.types and stamp:
            execution_id = event["data"]["execution_id"]
            by_type = self.seen.setdefault(execution_id, {})
            by_type.setdefault(event["type"], []).append((event, stream_time(stamp)))


AUTO_TYPES = ("execution.proposed", "firewall.verdict_issued", "execution.contract_created")


def auto_points(seen: Seen, sent: float, answered: float) -> list[float] | None:
    """An AUTO action's points in time, in order (one more than ``TIMELINE_STEPS``), or None while an
    announcement is missing or the call did not run at once."""
    if any(kind not in seen for kind in AUTO_TYPES):
        return None
    (proposal, proposal_stored), (verdict, verdict_stored), (contract, contract_stored) = (
        seen[kind][0] for kind in AUTO_TYPES
    )
    moves = contract["data"]["transitions"]
    if len(moves) < 2:
        return None
    return [
        sent,
        proposal["occurred_at"],
        proposal_stored,
        verdict["occurred_at"],
        verdict_stored,
        moves[0]["timestamp"],
        moves[-1]["timestamp"],
        contract["occurred_at"],
        contract_stored,
        answered,
    ]


APPROVAL_TYPES = (
    "execution.proposed",
    "firewall.verdict_issued",
    "ecs.requested",
    "human.responded",
    "human.decision_recorded",
    "execution.transitioned",
)


def approval_points(seen: Seen, sent: float, decided: float, answered: float) -> list[float] | None:
    """A held and approved action's points in time, in order (one more than ``APPROVAL_TIMELINE_STEPS``;
    ``decided``: when the operator's client sent the decision), or None while an announcement is missing."""
    if any(kind not in seen for kind in APPROVAL_TYPES):
        return None
    # The call's start (its move into RUNNING, told on its own or held back and told with its end) and
    # the event that tells its end.
    told = [
        (event, stored, move) for event, stored in seen["execution.transitioned"] for move in _moves(event)
    ]
    ends = [(event, stored) for event, stored, move in told if is_terminal(move["to_status"])]
    starts = [move for _, _, move in told if move["to_status"] == "running"]
    if not ends or not starts:
        return None
    (proposal, proposal_stored), (verdict, verdict_stored), (card, card_stored) = (
        seen[kind][0] for kind in APPROVAL_TYPES[:3]
    )
    (response, response_stored), (decision, decision_stored) = (seen[kind][0] for kind in APPROVAL_TYPES[3:5])
    end, end_stored = ends[0]
    return [
        sent,
        proposal["occurred_at"],
        proposal_stored,
        verdict["occurred_at"],
        verdict_stored,
        card["occurred_at"],
        card_stored,
        decided,
        response["occurred_at"],
        response_stored,
        decision["occurred_at"],
        decision_stored,
        starts[0]["timestamp"],
        end["occurred_at"],
        end_stored,
        answered,
    ]


def _moves(transitioned: dict[str, Any]) -> list[dict[str, Any]]:
    """The moves an ``execution.transitioned`` tells of: those held back and told with it, then its own."""
    data: dict[str, Any] = transitioned["data"]
    return [*data.get("earlier", []), data]


def step_medians(steps: tuple[str, ...], timelines: list[list[float]]) -> dict[str, float]:
    return {
        step: round(statistics.median(points[i + 1] - points[i] for points in timelines) * 1000, 3)
        for i, step in enumerate(steps)
    }


Scenario = AutoScenario | ApprovalScenario


@dataclass(frozen=True)
class TimelineRun:
    """A timeline scenario: the actions it runs, the announcements it follows, and the points in time of
    one action it reads from them (one more than its ``steps``; None while one is missing)."""

    name: str
    scenario: type[AutoScenario] | type[ApprovalScenario]
    types: tuple[str, ...]
    steps: tuple[str, ...]
    points: Callable[[Seen, Scenario, str, float, float], list[float] | None]


def _approved_points(
    seen: Seen, scenario: Scenario, execution_id: str, sent: float, done: float
) -> list[float] | None:
    decided = scenario.decided.get(execution_id) if isinstance(scenario, ApprovalScenario) else None
    return None if decided is None else approval_points(seen, sent, decided, done)


TIMELINES = {
    run.name: run
    for run in (
        TimelineRun(
            "pipeline_timeline",
            AutoScenario,
            AUTO_TYPES,
            TIMELINE_STEPS,
            lambda seen, _, __, sent, done: auto_points(seen, sent, done),
        ),
        TimelineRun(
            "pipeline_approval_timeline",
            ApprovalScenario,
            APPROVAL_TYPES,
            APPROVAL_TIMELINE_STEPS,
            _approved_points,
        ),
    )
}


async def run_timeline(run: TimelineRun, quick: bool) -> None:
    """A timeline scenario: its actions one at a time, each step's median (see ``TimelineRun``)."""
    count = COUNTS[run.scenario.name][0] // (5 if quick else 1)
    home = Path(tempfile.mkdtemp(prefix="overseer-bench-"))
    stack = LocalStack(home)
    try:
        await stack.start()
        await stack.wait_healthy()
        if run.scenario is ApprovalScenario:
            await make_fs_write_confirm(stack)
        scenario = run.scenario(stack, 1, f"{run.name}-{time.time_ns() % 10**9}")
        answered: list[tuple[str, float, float]] = []
        try:
            await scenario.start()
            async with Timeline(stack, run.types) as timeline:
                for i in range(-20, count):  # the first twenty warm the stack up
                    sent = time.time()
                    view = await proposed_and_settled(scenario.agent, scenario.proposal(i), scenario.wait)
                    if i >= 0:
                        answered.append((view["execution_id"], sent, time.time()))
                await asyncio.sleep(0.5)  # the last announcements
                timelines = [
                    points
                    for execution_id, sent, done in answered
                    if (
                        points := run.points(
                            timeline.seen.get(execution_id, {}), scenario, execution_id, sent, done
                        )
                    )
                    is not None
                ]
        finally:
            await scenario.close()
    finally:
        stack.stop()
        shutil.rmtree(home, ignore_errors=True)
    emit(
        {
            "scenario": run.name,
            "actions": len(timelines),
            "concurrency": 1,
            "p50_ms": round(statistics.median(points[-1] - points[0] for points in timelines) * 1000, 2),
            "steps_ms": step_medians(run.steps, timelines),
        }
    )


REPLICA_ROUNDS = 2


# One process of each service, then two replicas of each service that may run as several.
REPLICA_SETUPS: dict[str, dict[str, int]] = {
    "none": {},
    "executor": {"executor": 2},
    "firewall": {"firewall": 2},
}


async def run_replicas(concurrency: int, quick: bool) -> None:
    """``pipeline_auto`` at ``concurrency`` on a stack of one process per service and on stacks with two
    replicas of one service, alternated (one, two executors, two firewalls, one …) so the machine's
    drift meets each alike: a line per setup with the medians of its runs, then each two-replica
    setup's ratio to one process."""
    count = COUNTS["pipeline_auto"][1] // (5 if quick else 1)
    runs: dict[str, list[dict[str, Any]]] = {setup: [] for setup in REPLICA_SETUPS}
    for _ in range(REPLICA_ROUNDS):
        for setup, results in runs.items():
            home = Path(tempfile.mkdtemp(prefix="overseer-bench-"))
            stack = LocalStack(home, partitions=REPLICA_SETUPS[setup])
            try:
                await stack.start()
                await stack.wait_healthy()
                result, _ = await measure(stack, AutoScenario, count, concurrency, None)
                results.append(result)
            finally:
                stack.stop()
                shutil.rmtree(home, ignore_errors=True)
    lines = {
        setup: {
            "scenario": "pipeline_replicas",
            "executors": REPLICA_SETUPS[setup].get("executor", 1),
            "firewalls": REPLICA_SETUPS[setup].get("firewall", 1),
            "concurrency": concurrency,
            "actions": count,
            "runs": len(results),
            **{
                key: statistics.median(r[key] for r in results)
                for key in ("actions_per_s", "p50_ms", "p99_ms")
            },
        }
        for setup, results in runs.items()
    }
    for line in lines.values():
        emit(line)
    for service in ("executor", "firewall"):
        emit(
            {
                "scenario": "ratio_pipeline_replicas_2_vs_1",
                "service": service,
                "concurrency": concurrency,
                "ratio": round(lines[service]["actions_per_s"] / lines["none"]["actions_per_s"], 2),
            }
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", choices=[[], *SCENARIOS], default=[])
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--no-peers", action="store_true", help="skip the LangGraph peer benchmark")
    parser.add_argument("--quick", action="store_true", help="a fifth of the actions (smoke run)")
    parser.add_argument("--profile", type=Path, help="run every service under a profiler; reports here")
    parser.add_argument("--profiler", choices=sorted(PROFILERS), default="pyinstrument")
    parser.add_argument("--keep", action="store_true", help="keep the stack's home (stores, logs) afterwards")
    args = parser.parse_args(argv)
    scenarios = [s for s in PEERED if not args.scenarios or s in args.scenarios]
    runner = event_loop_runner()
    if scenarios:
        runner(
            run_pipelines(
                scenarios,
                args.concurrency,
                args.quick,
                args.profile,
                args.keep,
                args.profiler,
                not args.no_peers,
            )
        )
    for name, run in TIMELINES.items():
        if not args.scenarios or name in args.scenarios:
            runner(run_timeline(run, args.quick))
    if not args.scenarios or "pipeline_replicas" in args.scenarios:
        runner(run_replicas(args.concurrency, args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
