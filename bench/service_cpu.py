"""Benchmark ``service_cpu``: one service's CPU per action, replaying what it consumed in a pipeline run.

At high concurrency what limits the pipeline is the CPU its services spend per action, and on a shared
machine a whole pipeline run's throughput moves by a quarter within an hour: a change that saves a few
percent of one service's CPU cannot be told from that. This scenario measures one service at a time,
alone, on the same input every time:

1. **record**: ``pipeline_auto`` (or, with ``--pipeline approval``, ``pipeline_approval``: each action held
   for a person and approved by an automatic operator), ``--actions`` actions at concurrency 32 on a whole
   stack, then every message of the events stream, with its subject and headers (or ``--input FILE``: a
   recording kept earlier with ``--record FILE``, so that two versions of the code replay exactly the
   same messages);
2. **replay**, for each service named (default: executor, firewall, observer; any service but the gateway,
   whose input is HTTP): NATS and that service alone, on a fresh home; the recorded messages its durable
   consumers read, published by their owners in batches of ``--batch`` while the service is stopped
   (``SIGSTOP``), then applied once it is continued (``SIGCONT``): every replay meets the same batches.
   The first tenth of them warms the process up; then its CPU time (its threads' time on a CPU, from
   ``/proc``) from the next batch to the last one applied, less what it spends idle over that time
   (measured just before), per action and per message.

With ``--instructions`` the replayed service runs under valgrind's callgrind, which counts the instructions
it executes from the next batch to the last one applied: for the same code and input the same count to
a few parts in a thousand on a quiet machine, within 1 % with other work beside it (a slower round wakes
the service for more timers), so a change worth 1 % of a service shows in one round of each version (the
service runs about forty times slower meanwhile; one round of the executor takes about a minute). The lines then say ``instructions_per_action`` and ``instructions_per_message``.

Each of ``--rounds`` rounds replays every service in turn (a round of each, then the next round: the
machine's drift meets all alike); one JSON line per service, the median of its rounds:
``{"scenario":"service_cpu","for":"pipeline_auto","service":…,"actions":N,"messages":M,"batch":K,"cpu_ms_per_action":…,``
``"cpu_us_per_message":…,"rounds":[…]}`` (the actions and messages measured, past the warm-up).

    python bench/service_cpu.py [SERVICE ...] [--pipeline auto|approval] [--actions N] [--batch K]
                                [--rounds R] [--record FILE | --input FILE] [--instructions]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from nats.aio.client import Client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import cpu_time, drive, emit, event_loop_runner  # noqa: E402
from bench.pipeline import ApprovalScenario, AutoScenario, BusCounts, LocalStack, make_fs_write_confirm  # noqa: E402
from overseer_events.subjects import Subjects, owner_of_subject, subject_matches  # noqa: E402
from overseer_runtime.bus import connect  # noqa: E402
from overseer_runtime.permissions import PROVISIONER  # noqa: E402
from overseer_runtime.stream_reader import StreamReader  # noqa: E402

REPLAYED = ("executor", "firewall", "observer", "reasoning", "col")  # every service that only consumes events
IDLE_SECONDS = 1.0  # how long the service's idle CPU is measured before the replay
POLL_SECONDS = 0.001  # how often the service's consumers are asked whether they applied a batch


def note(text: str) -> None:
    print(f"[service_cpu] {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Recorded:
    """One message of the events stream as it was stored: its subject, its headers, its bytes."""

    subject: str
    headers: dict[str, str]
    data: bytes

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "headers": self.headers,
            "data": base64.b64encode(self.data).decode(),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Recorded:
        return cls(obj["subject"], dict(obj["headers"]), base64.b64decode(obj["data"]))


@dataclass(frozen=True)
class Recording:
    pipeline: str  # the scenario recorded: pipeline_auto or pipeline_approval
    actions: int
    messages: list[Recorded]

    def save(self, path: Path) -> None:
        head = orjson.dumps({"pipeline": self.pipeline, "actions": self.actions})
        path.write_bytes(b"\n".join([head, *(orjson.dumps(m.to_json()) for m in self.messages)]) + b"\n")

    @classmethod
    def load(cls, path: Path) -> Recording:
        first, *rest = path.read_bytes().splitlines()
        head = orjson.loads(first)
        return cls(
            head["pipeline"], int(head["actions"]), [Recorded.from_json(orjson.loads(m)) for m in rest]
        )


PIPELINES: dict[str, type[AutoScenario] | type[ApprovalScenario]] = {
    "auto": AutoScenario,
    "approval": ApprovalScenario,
}


async def record(pipeline: str, actions: int) -> Recording:
    """``actions`` actions of ``pipeline`` at concurrency 32 on a whole stack; then every message the stream
    holds."""
    home = Path(tempfile.mkdtemp(prefix="overseer-bench-record-"))
    stack = LocalStack(home)
    scenario_cls = PIPELINES[pipeline]
    try:
        await stack.start()
        await stack.wait_healthy()
        if scenario_cls is ApprovalScenario:
            await make_fs_write_confirm(stack)
        scenario = scenario_cls(stack, 32, f"service-cpu-{time.time_ns() % 10**9}")
        await scenario.start()
        try:
            await drive(actions, 32, scenario.one)
        finally:
            await scenario.close()
        async with BusCounts(stack) as bus:
            await bus.settled()  # the follow-ups of the last actions are stored too
        nc = await connect(stack.nats.url, name="bench-record", credential=stack.nats.credential(PROVISIONER))
        try:
            messages = await _stream_messages(nc)
        finally:
            await nc.close()
    finally:
        stack.stop()
        shutil.rmtree(home, ignore_errors=True)
    note(f"recorded {len(messages)} messages of {actions} actions of {scenario_cls.name}")
    return Recording(scenario_cls.name, actions, messages)


async def _stream_messages(nc: Client) -> list[Recorded]:
    """Every message of the events stream, with the headers its publisher gave it (the stream's own
    ``Nats-*`` headers dropped, but the ``Nats-Msg-Id`` that de-duplicates it)."""
    subjects = Subjects()
    async with StreamReader(nc, subjects.events_stream) as reader:
        return [
            Recorded(
                message.subject,
                {k: v for k, v in message.headers.items() if not k.startswith("Nats-") or k == "Nats-Msg-Id"},
                message.data,
            )
            async for message in reader.messages(f"{subjects.namespace}.>")
        ]


@dataclass
class Consumers:
    """The durable consumers of one service: their filters, and whether they applied all they were given."""

    nc: Client
    names: list[str]
    filters: tuple[str, ...]

    @classmethod
    async def of(cls, nc: Client, service: str) -> Consumers:
        js = nc.jetstream()
        infos = await js.consumers_info(Subjects().events_stream)
        mine = [c for c in infos if c.name == service or c.name.startswith(f"{service}_")]
        filters = []
        for info in mine:
            config = info.config
            filters.extend(
                config.filter_subjects or ([config.filter_subject] if config.filter_subject else [])
            )
        return cls(nc, [c.name for c in mine], tuple(filters))

    async def waiting(self) -> bool:
        """Whether every consumer has a pull request waiting (the service is up and reading)."""
        js = self.nc.jetstream()
        infos = [await js.consumer_info(Subjects().events_stream, name) for name in self.names]
        return all(int(info.num_waiting or 0) > 0 for info in infos)

    async def applied(self) -> bool:
        """Whether every message given to the consumers was acknowledged (applied and committed)."""
        js = self.nc.jetstream()
        for name in self.names:
            info = await js.consumer_info(Subjects().events_stream, name)
            if int(info.num_pending or 0) or int(info.num_ack_pending or 0):
                return False
        return True


async def replay(
    recording: Recording, service: str, batch: int, instructions: bool = False
) -> dict[str, Any]:
    """The service alone applying what it consumed in the recording: its CPU per action and per message
    (``instructions``: the instructions it executed instead, counted by valgrind)."""
    home = Path(tempfile.mkdtemp(prefix=f"overseer-bench-{service}-"))
    stack = LocalStack(
        home, services=(service,), launcher=under_callgrind(home) if instructions else ([], {})
    )
    connections: list[Client] = []
    publishers: dict[str, Client] = {}  # by owner: each owner's events are published with its credential
    try:
        await stack.start()
        nats = stack.nats
        watcher = await connect(nats.url, name="bench-watch", credential=nats.credential(PROVISIONER))
        connections.append(watcher)
        consumers = await Consumers.of(watcher, service)
        wanted = [m for m in recording.messages if subject_matches(m.subject, consumers.filters)]
        for owner in {owner_of_subject(m.subject) for m in wanted}:
            assert owner is not None, "every event's subject names its owner"
            publishers[owner] = await connect(
                nats.url, name=f"bench-{owner}", credential=nats.credential(owner)
            )
            connections.append(publishers[owner])
        await _until(consumers.waiting, timeout=300.0 if instructions else 90.0)
        process = stack.children[service]
        # The first tenth warms the process up (its first batches pay for what it loads and caches once).
        warm = max(batch, len(wanted) // 10 // batch * batch)
        if len(wanted) <= warm:
            raise SystemExit(f"{service} read {len(wanted)} of the recorded messages: record more actions")
        for first in range(0, warm, batch):
            await _apply(process, publishers, consumers, wanted[first : first + batch])
        wanted = wanted[warm:]
        counter = Instructions(home, process.pid) if instructions else CpuTime(process.pid)
        await counter.start()
        for first in range(0, len(wanted), batch):
            await _apply(process, publishers, consumers, wanted[first : first + batch])
        spent = await counter.stop()
    finally:
        for nc in connections:
            await nc.close()
        stack.stop()
        shutil.rmtree(home, ignore_errors=True)
    actions = recording.actions * len(wanted) / (len(wanted) + warm)  # those of the measured messages
    return {
        "service": service,
        "actions": round(actions),
        "messages": len(wanted),
        **counter.figures(spent, actions, len(wanted)),
    }


def under_callgrind(home: Path) -> tuple[list[str], dict[str, str]]:
    """The replayed service under valgrind's callgrind, counting nothing until told (``Instructions``), with
    its string hashes fixed (a dict's layout, hence the instructions that walk it, depends on them)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={home}/callgrind.%p",
    ]
    return command, {"PYTHONHASHSEED": "0"}


class CpuTime:
    """The process's CPU time between ``start`` and ``stop`` (seconds), less its idle rate, measured over
    a second before ``start``: a process waiting for messages still wakes for timers and heartbeats."""

    FIGURES = ("cpu_ms_per_action", "cpu_us_per_message")  # what ``figures`` names

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.idle_rate = self.spent_before = self.started = 0.0

    async def start(self) -> None:
        before = cpu_time(self.pid)
        await asyncio.sleep(IDLE_SECONDS)
        self.idle_rate = (cpu_time(self.pid) - before) / IDLE_SECONDS
        self.started, self.spent_before = time.monotonic(), cpu_time(self.pid)

    async def stop(self) -> float:
        return cpu_time(self.pid) - self.spent_before - self.idle_rate * (time.monotonic() - self.started)

    @classmethod
    def figures(cls, spent: float, actions: float, messages: int) -> dict[str, float]:
        per_action, per_message = cls.FIGURES
        return {
            per_action: round(spent * 1000 / actions, 4),
            per_message: round(spent * 1e6 / max(messages, 1), 1),
        }


class Instructions:
    """The instructions a process under :func:`under_callgrind` executed between ``start`` and ``stop``: the
    same for the same code and input to a few parts in a thousand on a quiet machine and within 1 % on a
    busy one, where CPU time on a shared machine moves by several percent within minutes."""

    FIGURES = ("instructions_per_action", "instructions_per_message")  # what ``figures`` names

    def __init__(self, home: Path, pid: int) -> None:
        self.home = home
        self.pid = pid

    async def start(self) -> None:
        await _callgrind_control("--instr=on", self.pid)

    async def stop(self) -> float:
        await _callgrind_control("--dump", self.pid)
        dump = self.home / f"callgrind.{self.pid}.1"  # the first dump: what ran since the counting began
        totals = [line for line in dump.read_text().splitlines() if line.startswith("totals:")]
        return float(totals[0].split()[1])

    @classmethod
    def figures(cls, spent: float, actions: float, messages: int) -> dict[str, float]:
        per_action, per_message = cls.FIGURES
        return {per_action: round(spent / actions), per_message: round(spent / max(messages, 1))}


async def _callgrind_control(option: str, pid: int) -> None:
    """Tell the callgrind of ``pid`` to do something; returns once it did."""
    process = await asyncio.create_subprocess_exec(
        "callgrind_control",
        option,
        str(pid),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    if process.returncode != 0 or b"OK" not in output:
        raise RuntimeError(f"callgrind_control {option} {pid}: {output.decode(errors='replace')}")


async def _apply(
    process: subprocess.Popen[bytes],
    publishers: dict[str, Client],
    consumers: Consumers,
    messages: list[Recorded],
) -> None:
    """Publish ``messages`` while the service is stopped, continue it, and wait until it applied them."""
    process.send_signal(signal.SIGSTOP)
    try:
        for message in messages:
            owner = owner_of_subject(message.subject)
            assert owner is not None
            js = publishers[owner].jetstream()
            await js.publish(message.subject, message.data, headers=message.headers)
    finally:
        process.send_signal(signal.SIGCONT)
    await _until(consumers.applied, timeout=60.0)


async def _until(check: Callable[[], Awaitable[bool]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{check.__qualname__} still false after {timeout:g}s")
        await asyncio.sleep(POLL_SECONDS)


async def run(options: argparse.Namespace) -> None:
    recording = (
        Recording.load(options.input) if options.input else await record(options.pipeline, options.actions)
    )
    if options.record:
        recording.save(options.record)
    services = options.services or ["executor", "firewall", "observer"]
    rounds: dict[str, list[dict[str, Any]]] = {service: [] for service in services}
    for _ in range(options.rounds):
        for service in services:
            rounds[service].append(await replay(recording, service, options.batch, options.instructions))
            note(f"{service}: {rounds[service][-1]}")
    per_action, per_message = (Instructions if options.instructions else CpuTime).FIGURES
    for service, runs in rounds.items():
        emit(
            {
                "scenario": "service_cpu",
                "for": recording.pipeline,
                "service": service,
                "actions": runs[0]["actions"],
                "messages": runs[0]["messages"],
                "batch": options.batch,
                per_action: round(statistics.median(r[per_action] for r in runs), 4),
                per_message: round(statistics.median(r[per_message] for r in runs), 1),
                "rounds": [r[per_action] for r in runs],
            }
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("services", nargs="*", choices=[[], "service_cpu", *REPLAYED], default=[])
    parser.add_argument("--pipeline", choices=sorted(PIPELINES), default="auto", help="the actions recorded")
    parser.add_argument("--actions", type=int, default=2000, help="actions recorded")
    parser.add_argument("--batch", type=int, default=24, help="messages published per stop of the service")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", type=Path, help="keep the recorded messages in this file")
    parser.add_argument("--input", type=Path, help="replay a recording kept with --record")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each service's instructions under valgrind's callgrind instead of its CPU time",
    )
    options = parser.parse_args(argv)
    options.services = [s for s in options.services if s != "service_cpu"]  # bench/run.py names the scenario
    event_loop_runner()(run(options))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
