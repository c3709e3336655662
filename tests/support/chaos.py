"""A stack run by `overseer up` under a mixed load of actions while its parts are killed, and the account
afterwards: which accepted actions were lost, which effects happened twice. Shared by the tests that
kill a part of the stack and by ``bench/chaos.py``.

The load alternates ``email.send`` (irreversible: each mail has its own subject, and the SMTP sink
`overseer up` runs keeps every message with its execution's id) and ``fs.write`` (a file each), both
made AUTO by the admin policy so no person is needed. An action counts once the gateway accepted it
(``202``); one the gateway could not take (it was down) is the client's to retry, never lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import email
import email.policy
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from overseer_runtime.partitions import index_env

TERMINAL = frozenset({"SUCCESS", "FAILED", "REJECTED", "CANCELLED"})
SERVICES = ("gateway", "reasoning", "firewall", "executor", "col", "observer")


# -- the processes ------------------------------------------------------------------------------
def processes_with_home(home: Path) -> list[int]:
    """PIDs of every process whose environment names this OVERSEER_HOME (the supervisor's children too)."""
    marker = f"OVERSEER_HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def pid_of(home: Path, argument: str, *, environ: Mapping[str, str] | None = None) -> int:
    """The pid of this stack's process with ``argument`` in its command line (0 when none runs): a
    service's module (``overseer_col``) or a cluster node's configuration file; with ``environ``, one
    whose environment also holds those variables."""
    wanted = [f"{name}={value}".encode() for name, value in (environ or {}).items()]
    for pid in processes_with_home(home):
        try:
            cmdline = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
            variables = (Path("/proc") / str(pid) / "environ").read_bytes().split(b"\0") if wanted else []
        except OSError:
            continue
        if argument.encode() in cmdline and all(variable in variables for variable in wanted):
            return pid
    return 0


def replica_pid(home: Path, service: str, partition: int) -> int:
    """The pid of the replica of ``service`` running ``partition`` in this stack (0 when none runs)."""
    return pid_of(home, f"overseer_{service}", environ=index_env(partition))


def node_config(home: Path, index: int) -> str:
    """The configuration file of cluster node ``index`` (what its nats-server is started with)."""
    return str(home / "nats" / f"node{index}" / "nats-server.conf")


@dataclass
class UpStack:
    """`overseer up` as a child process on ``home`` and ``port`` (``cluster``: nodes of its own cluster;
    ``executors``, ``firewalls``: replicas of those services)."""

    home: Path
    port: int
    cluster: int = 0
    executors: int = 1  # executor replicas, each running one partition of the work
    firewalls: int = 1  # firewall replicas, likewise
    proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OVERSEER_", "NATS_"))}
        return env | {"OVERSEER_HOME": str(self.home), "XDG_STATE_HOME": str(self.home.parent / "state")}

    def start(self) -> UpStack:
        overseer = Path(sys.executable).with_name("overseer")
        argv = [str(overseer), "up", "--port", str(self.port)]
        if self.cluster:
            argv += ["--cluster", str(self.cluster)]
        if self.executors > 1:
            argv += ["--executors", str(self.executors)]
        if self.firewalls > 1:
            argv += ["--firewalls", str(self.firewalls)]
        self.proc = subprocess.Popen(
            argv, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        return self

    def token(self, role: str) -> str:
        return str(json.loads((self.home / "tokens.json").read_text())[role])

    async def healthy(self, timeout: float = 120.0) -> float:
        """Seconds until ``/healthz`` answers 200 (raises when the supervisor exits or time runs out)."""
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=self.url, timeout=2.0) as http:
            while time.monotonic() - started < timeout:
                if self.proc is None or self.proc.poll() is not None:
                    raise RuntimeError("overseer up exited")
                try:
                    if (await http.get("/healthz")).status_code == 200:
                        return time.monotonic() - started
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)
        raise TimeoutError("the stack did not become healthy")

    def stop(self) -> str:
        """Ctrl-C, and what `overseer up` printed."""
        if self.proc is None:
            return ""
        self.proc.send_signal(signal.SIGINT)
        out, _ = self.proc.communicate(timeout=60)
        return out


async def allow_without_a_person(stack: UpStack) -> None:
    """The admin policy with ``email.send`` and ``fs.write`` AUTO, and loop detection out of the way."""
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.token('admin')}"}
    ) as admin:
        policy = (await admin.get("/v1/policy")).json()
        document = {k: v for k, v in policy["admin"].items() if k != "version"}
        document["defaults"] = {**document.get("defaults", {}), "email.send": "AUTO", "fs.write": "AUTO"}
        answer = await admin.put("/v1/policy/admin", json=document)
        answer.raise_for_status()


# -- the load and the account ---------------------------------------------------------------------
@dataclass
class MixedLoad:
    """Actions proposed as the agent, ``concurrency`` at a time, until stopped; each accepted one noted."""

    stack: UpStack
    run_id: str
    accepted: dict[str, str] = field(default_factory=dict)  # execution id -> tool
    refused: int = 0  # proposals the gateway could not take (it was down): never accepted, never lost
    _count: int = 0

    def _next(self) -> tuple[str, dict[str, Any]]:
        self._count += 1
        n = self._count
        if n % 2:
            return "email.send", {"to": "bob@example.com", "subject": f"{self.run_id} #{n}", "body": "chaos"}
        return "fs.write", {"path": f"chaos/{self.run_id}-{n}.txt", "content": f"#{n}"}

    async def run(self, stop: asyncio.Event, concurrency: int = 4) -> None:
        headers = {"Authorization": f"Bearer {self.stack.token('agent')}"}
        async with httpx.AsyncClient(base_url=self.stack.url, headers=headers, timeout=15.0) as agent:
            await asyncio.gather(*(self._propose(agent, stop, lane) for lane in range(concurrency)))

    async def _propose(self, agent: httpx.AsyncClient, stop: asyncio.Event, lane: int) -> None:
        """As an agent does: propose, wait for the outcome, then the next (a wait cut short by a part of the
        stack that died is not retried here: the account asks again at the end)."""
        while not stop.is_set():
            tool, args = self._next()
            session = f"{self.run_id}-{lane}-{self._count}"
            try:
                answer = await agent.post(
                    "/v1/actions", json={"session_id": session, "tool": tool, "args": args}
                )
            except httpx.HTTPError:
                answer = None
            if answer is None or answer.status_code != 202:
                self.refused += 1
                await asyncio.sleep(0.2)
                continue
            execution_id = str(answer.json()["execution_id"])
            self.accepted[execution_id] = tool
            with contextlib.suppress(httpx.HTTPError):
                await agent.get(f"/v1/actions/{execution_id}", params={"wait": 5, "until": "terminal"})


@dataclass(frozen=True)
class Account:
    accepted: int
    refused: int
    lost: list[str]  # accepted, and never ended (nor waiting for a person), or a mail sent never recorded
    duplicated: list[str]  # an irreversible effect that happened more than once
    reconciliations: list[str]  # interrupted irreversible calls a person is asked about: not guessed

    def as_dict(self) -> dict[str, Any]:
        return {
            "actions_accepted": self.accepted,
            "actions_refused_while_down": self.refused,
            "actions_lost": len(self.lost),
            "effects_duplicated": len(self.duplicated),
            "reconciliations": len(self.reconciliations),
        }


def mails_by_execution(mail_dir: Path) -> Counter[str]:
    """How many mails the SMTP sink holds for each execution (its ``X-Overseer-Execution-Id``)."""
    counts: Counter[str] = Counter()
    for path in mail_dir.glob("*.eml") if mail_dir.is_dir() else ():
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        execution_id = message.get("X-Overseer-Execution-Id")
        if execution_id:
            counts[str(execution_id)] += 1
    return counts


async def account(load: MixedLoad, timeout: float = 120.0) -> Account:
    """Wait for every accepted action to end (or to wait for a person), then count."""
    views: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    headers = {"Authorization": f"Bearer {load.stack.token('viewer')}"}
    async with httpx.AsyncClient(base_url=load.stack.url, headers=headers, timeout=40.0) as viewer:
        for execution_id in load.accepted:
            while time.monotonic() < deadline:
                try:
                    answer = await viewer.get(
                        f"/v1/actions/{execution_id}", params={"wait": 5, "until": "terminal"}
                    )
                except httpx.HTTPError:
                    await asyncio.sleep(0.5)
                    continue
                view = answer.json() if answer.status_code == 200 else {}
                views[execution_id] = view
                if view.get("consequence_label") in TERMINAL or view.get("consequence_label") == "WAITING":
                    break
    mails = mails_by_execution(load.stack.home / "mail")
    lost, waiting = [], []
    for execution_id, tool in load.accepted.items():
        label = views.get(execution_id, {}).get("consequence_label")
        if label == "WAITING":
            waiting.append(execution_id)
        elif label not in TERMINAL or (
            tool == "email.send" and label == "SUCCESS" and mails[execution_id] == 0
        ):
            lost.append(execution_id)
    duplicated = [execution_id for execution_id, count in mails.items() if count > 1]
    return Account(len(load.accepted), load.refused, lost, duplicated, waiting)
