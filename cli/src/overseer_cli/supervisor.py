"""``overseer up`` and ``overseer status``: the whole stack as supervised processes.

``up`` starts NATS when none is reachable, the dev SMTP sink, and the six
services, each as its own process with its own NATS credentials; waits until
each answers ``health`` as ready; restarts a crashed one with backoff; and
on Ctrl-C or SIGTERM stops everything. Children are in their own sessions
(a terminal's Ctrl-C reaches only the supervisor, which stops them in
order) and carry a parent-death signal, so even a killed supervisor leaves
no process behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nats.errors import Error as NatsError

from overseer_cli import homes
from overseer_events.subjects import SERVICES, Subjects
from overseer_executor.settings import ToolsSettings
from overseer_gateway.adapters.tokens import ensure_tokens_file
from overseer_gateway.domain.access import Role
from overseer_gateway.settings import GatewaySettings
from overseer_runtime.bus import connect
from overseer_runtime.config import (
    ConfigurationError,
    NatsSettings,
    Settings,
    load_settings,
)
from overseer_runtime.credentials import Keyring, NatsCredential, credentials_for, keys_dir
from overseer_runtime.home import private_umask, secure_home
from overseer_runtime.launcher import (
    EmbeddedCluster,
    EmbeddedNats,
    StoreInUse,
    die_with_parent,
    free_port,
    reachable,
)
from overseer_runtime.partitions import instance_name, instances
from overseer_runtime.permissions import PROVISIONER, READER
from overseer_runtime.provisioning import Subscription, provision_at
from overseer_runtime.rpc import rpc_request
from overseer_runtime.service import Service

# `overseer status` answers within this, whatever state the bus is in.
STATUS_TIMEOUT = 5.0

# How much of the end of a service's log is read to show its last lines.
LOG_TAIL_BYTES = 16 * 1024

# Start order: the deciders before the producers, the gateway last.
START_ORDER = ("observer", "col", "firewall", "executor", "reasoning", "gateway")


def port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        return sock.connect_ex((host, port)) == 0


@dataclass
class Restarts:
    """When to start a process again that exited: after a backoff (0.5 s doubling to 30 s), which a
    minute of health resets. Serves the services and the embedded nats-server alike."""

    name: str
    backoff: float = 0.5
    next_start: float = 0.0
    started_at: float = field(default_factory=time.monotonic)
    count: int = 0

    def due(self, running: bool, exit_code: int | None, now: float) -> bool:
        """Whether to start it again now; says once that it exited, and when it will be restarted."""
        if running:
            if now - self.started_at > 60:
                self.backoff = 0.5  # healthy for a minute: forget past crashes
            return False
        if self.next_start == 0.0:
            self.next_start = now + self.backoff
            print(f"{self.name} exited ({exit_code}); restarting in {self.backoff:.1f}s")
            self.backoff = min(self.backoff * 2, 30.0)
            return False
        if now < self.next_start:
            return False
        self.next_start = 0.0
        self.count += 1
        return True

    def started(self) -> None:
        self.started_at = time.monotonic()


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: Restarts = field(init=False)

    def __post_init__(self) -> None:
        self.restarts = Restarts(self.name)

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
        log.close()
        self.restarts.started()

    def tend(self, now: float) -> None:
        code = self.process.returncode if self.process else None
        if self.restarts.due(self.running, code, now):
            self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def terminate(self) -> None:
        if self.running and self.process is not None:
            self.process.terminate()

    def last_words(self, lines: int = 5) -> str:
        """How it stands (running, or how it exited and how often it was restarted) and the end of its log."""
        code = self.process.poll() if self.process else None
        state = "not started" if self.process is None else "running" if code is None else f"exited ({code})"
        if self.restarts.count:
            state += f", restarted {self.restarts.count} time(s)"
        try:  # only the end: the log is appended to across runs, and may be large
            with self.log_path.open("rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
                tail = log.read().decode("utf-8", errors="replace").splitlines()[-lines:]
        except OSError:
            tail = []
        return "\n".join(
            [f"  {self.name}: {state}; the end of {self.log_path}:", *(f"    {line}" for line in tail)]
        )

    def wait_or_kill(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Stack:
    settings: Settings
    host: str
    port: int
    nats_url: str | None = None
    nats: EmbeddedNats | EmbeddedCluster | None = None
    children: list[Child] = field(default_factory=list)
    smtp_port: int = 0
    cluster: int = 0  # >= 3: an embedded JetStream cluster of that many nodes, streams replicated on each
    # How many processes share each partitioned service's work (see overseer_runtime.partitions).
    partitions: dict[str, int] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.settings.home

    @property
    def gateway_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def subjects(self) -> Subjects:
        return self.settings.subjects

    def start_nats(self) -> str:
        if self.cluster:
            self.nats = EmbeddedCluster(self.home, size=self.cluster).start()
            print(
                f"Started a {self.cluster}-node nats-server cluster at {self.nats.url} (stores under {self.nats.dir})"
            )
            return self.nats.url
        url = self.nats_url or self.settings.nats_url
        if url and reachable(url):
            print(f"Using NATS at {url}")
            return url
        if url:
            print(f"NATS at {url} is unreachable; starting an embedded nats-server")
        self.nats = EmbeddedNats(self.home).start()
        print(f"Started nats-server at {self.nats.url} (store {self.nats.dir})")
        return self.nats.url

    def base_env(self, url: str) -> dict[str, str]:
        # No credential is inherited: each child is handed its own below, and no other.
        env = {k: v for k, v in os.environ.items() if not k.startswith("OVERSEER_NATS_")}
        env |= {
            "NATS_URL": url,
            "OVERSEER_HOME": str(self.home),
            "OVERSEER_GATEWAY__HOST": self.host,
            "OVERSEER_GATEWAY__PORT": str(self.port),
        }
        if self.cluster:
            env["OVERSEER_NATS__REPLICAS"] = str(self.cluster)
        for service, count in self.partitions.items():  # every service asks all of them
            env[f"OVERSEER_PARTITIONS__{service.upper()}"] = str(count)
        if self.smtp_port:  # email.send and the approval notices both go to the dev sink
            env["OVERSEER_TOOLS__SMTP_PORT"] = str(self.smtp_port)
            env["OVERSEER_CHANNELS__SMTP__PORT"] = str(self.smtp_port)
        return env

    def credential(self, user: str) -> NatsCredential:
        """``user``'s credential: the embedded server's keyring, else the environment (an external server)."""
        if self.nats is not None:
            return self.nats.credential(user)
        return credentials_for(self.settings, user)

    async def provision(self, url: str) -> None:
        nats = self.settings.nats
        if self.cluster:  # every stream on every node: the stack outlives the loss of any one
            nats = nats.model_copy(update={"replicas": self.cluster})
        await provision_stack(url, self.credential(PROVISIONER), self.subjects, nats, self.partitions)

    def build_children(self, url: str) -> None:
        logs = self.home / "logs"
        base = self.base_env(url)
        if _module_exists("overseer_executor.adapters.smtp_sink"):
            self.children.append(
                Child(
                    "smtp-sink",
                    [
                        sys.executable,
                        "-m",
                        "overseer_executor.adapters.smtp_sink",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.smtp_port),
                        "--dir",
                        str(self.home / "mail"),
                    ],
                    base,
                    logs / "smtp-sink.log",
                )
            )
        for service in START_ORDER:
            env = dict(base)
            if self.nats is not None:
                env |= self.nats.env_for(service)
            for name, partition in instances(service, self.partitions):
                argv = [sys.executable, "-m", f"overseer_{service}"]
                self.children.append(Child(name, argv, env | partition, logs / f"{name}.log"))

    def write_stack_file(self, url: str) -> None:
        info = {
            "gateway_url": self.gateway_url,
            "nats_url": url,
            "namespace": self.subjects.namespace,
            "supervisor_pid": os.getpid(),
            "smtp": {"host": "127.0.0.1", "port": self.smtp_port},
            "partitions": self.partitions,
        }
        (self.home / "stack.json").write_text(json.dumps(info, indent=2), encoding="utf-8")

    def stop_all(self) -> None:
        deadline = time.monotonic() + 10.0
        for child in reversed(self.children):
            child.terminate()
        for child in reversed(self.children):
            child.wait_or_kill(deadline)
        if self.nats is not None:
            self.nats.stop()
        with_stack = self.home / "stack.json"
        if with_stack.is_file():
            with_stack.unlink()


def stack_services() -> list[Service]:
    """The six services, as declared by their packages (``overseer_<name>.bootstrap``)."""
    import importlib

    found: list[Service] = []
    for name in SERVICES:
        module = importlib.import_module(f"overseer_{name}.bootstrap")
        classes = [
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Service) and value.name == name
        ]
        if len(classes) != 1:
            raise RuntimeError(f"overseer_{name}.bootstrap declares {len(classes)} services named {name}")
        found.append(classes[0]())
    return found


def stack_subscriptions() -> dict[str, Sequence[Subscription]]:
    return {service.name: service.subscriptions() for service in stack_services()}


async def provision_stack(
    url: str,
    provisioner: NatsCredential,
    subjects: Subjects,
    nats_settings: NatsSettings,
    partitions: Mapping[str, int] | None = None,
) -> None:
    """Streams and every service's durable consumers (each partition's), as the provisioner, before any
    service starts."""
    await provision_at(url, provisioner, subjects, stack_subscriptions(), nats_settings, partitions)


def _module_exists(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


async def _health_all(
    url: str,
    credential: NatsCredential,
    subjects: Subjects,
    timeout: float = 1.0,
    *,
    reconnect: bool = True,
    partitions: Mapping[str, int] | None = None,
    detailed: bool = True,
) -> dict[str, Any]:
    nc = await connect(
        url, name="overseer-supervisor", credential=credential, connect_timeout=timeout, reconnect=reconnect
    )
    try:

        async def one(service: str) -> tuple[str, Any]:
            try:
                return service, await rpc_request(
                    nc,
                    service,
                    "health",
                    {"detailed": detailed},
                    timeout,
                    subjects=subjects,
                    partitions=partitions,
                )
            except Exception as exc:
                return service, {"status": "down", "error": str(exc)}

        return dict(await asyncio.gather(*(one(s) for s in SERVICES)))
    finally:
        await nc.close()


@dataclass
class BusWatch:
    """The embedded nats-server is supervised like the services: restarted with backoff when it dies
    (on the same port and store, so every connection comes back by itself), then provisioned again.
    A cluster's nodes are each restarted the same way; the streams live on the others meanwhile."""

    restarts: Restarts = field(default_factory=lambda: Restarts("nats-server"))
    nodes: dict[int, Restarts] = field(default_factory=dict)

    async def tend(self, stack: Stack, url: str, now: float) -> None:
        nats = stack.nats
        assert nats is not None
        if isinstance(nats, EmbeddedCluster):
            self.tend_nodes(nats, now)
            return
        running = nats.process is not None and nats.process.poll() is None
        if not self.restarts.due(running, nats.process.returncode if nats.process else None, now):
            return
        try:
            nats.start()
            await stack.provision(url)
        except Exception as exc:
            print(f"nats-server did not come back: {exc}")
            return
        self.restarts.started()
        print(f"nats-server is back at {nats.url}")

    def tend_nodes(self, cluster: EmbeddedCluster, now: float) -> None:
        for index, process in enumerate(cluster.processes):
            restarts = self.nodes.setdefault(index, Restarts(f"nats-server node {index}"))
            running = process is not None and process.poll() is None
            if restarts.due(running, process.returncode if process else None, now):
                cluster.start_node(index)
                restarts.started()
                print(f"nats-server node {index} is back at {cluster.node_url(index)}")


async def _supervise(stack: Stack, url: str, stop: asyncio.Event, ready_timeout: float) -> int:
    for child in stack.children:
        child.start()
    bus = BusWatch()
    not_ready = await _wait_ready(stack, url, stop, ready_timeout, bus)
    if stop.is_set():
        return 0
    if not_ready is not None:
        print(f"Services not ready after {ready_timeout:.0f}s: {', '.join(not_ready)}; see {stack.home}/logs")
        for child in stack.children:
            if child.name.partition(".")[0] in not_ready:  # a replica's name is its service's, then .p<n>
                print(child.last_words())
        return 1
    print(f"All six services are ready. Gateway: {stack.gateway_url}  (tokens: {stack.home / 'tokens.json'})")
    operator = ensure_tokens_file(stack.home)[Role.OPERATOR.value]
    print(f"Console: {stack.gateway_url}/  (sign in with the operator token {operator};")
    print(f"         every role's token is in {stack.home / 'tokens.json'})")
    print("Press Ctrl-C to stop.")
    while not stop.is_set():
        await _tend(stack, url, bus)
        try:
            await asyncio.wait_for(stop.wait(), timeout=0.25)
        except TimeoutError:
            pass
    return 0


async def _tend(stack: Stack, url: str, bus: BusWatch) -> None:
    """Start again the embedded nats-server and any child that exited, each when its backoff allows."""
    now = time.monotonic()
    if stack.nats is not None:
        await bus.tend(stack, url, now)
    for child in stack.children:
        child.tend(now)


async def _wait_ready(
    stack: Stack, url: str, stop: asyncio.Event, ready_timeout: float, bus: BusWatch
) -> list[str] | None:
    """Ask every service's health until all say ready (None), or until stopped or ``ready_timeout``
    seconds have passed (the services not ready by then); the bus is tended meanwhile."""
    reader = stack.credential(READER)
    deadline = time.monotonic() + ready_timeout
    health: dict[str, Any] = {}
    while time.monotonic() < deadline and not stop.is_set():
        # A service that exits while the stack starts (a port not yet free, a slow bus) is started again
        # like one that exits later: without this it would only be found not ready when the wait ends.
        await _tend(stack, url, bus)
        try:
            # Not detailed: readiness is one flag, and a detailed answer asks the server about every
            # consumer first, which a machine busy starting six services may not do within the timeout.
            health = await _health_all(
                url,
                reader,
                stack.subjects,
                timeout=0.5,
                reconnect=False,
                partitions=stack.partitions,
                detailed=False,
            )
        except Exception as exc:  # the bus is not there (yet, or any more): ask again
            health = {s: {"status": "down", "error": str(exc)} for s in SERVICES}
        if all(h.get("ready") for h in health.values()):
            return None
        await asyncio.sleep(0.2)
    return [s for s, h in health.items() if not h.get("ready")]


def run_stack(
    host: str | None = None,
    port: int | None = None,
    nats_url: str | None = None,
    ready_timeout: float = 60.0,
    cluster: int = 0,
    executors: int | None = None,
    firewalls: int | None = None,
) -> int:
    """Run the whole stack in the foreground until Ctrl-C / SIGTERM; returns the exit code."""
    try:  # every section and key, before anything starts: a typo is one message, not a service that never starts
        settings = load_settings()
    except ConfigurationError as exc:
        print(f"Not starting: {exc}", file=sys.stderr)
        return 2
    gateway = settings.typed("gateway", GatewaySettings)
    stack = Stack(
        settings,
        host or gateway.host,
        port or gateway.port,
        nats_url,
        cluster=cluster,
        partitions=replicas(settings, executor=executors, firewall=firewalls),
    )
    # Before anything starts: a taken port would otherwise show only as a gateway that never gets ready.
    if port_in_use(stack.host, stack.port):
        print(
            f"Port {stack.port} on {stack.host} is taken by another program, so the gateway cannot listen "
            f"there. Choose another: `overseer up --port {stack.port + 1}` (or OVERSEER_GATEWAY__PORT="
            f"{stack.port + 1}, or [gateway] port in overseer.toml).",
            file=sys.stderr,
        )
        return 2
    private_umask()  # every file the stack writes under OVERSEER_HOME is owner-only
    secure_home(stack.home)
    homes.record(stack.home)  # so the CLI finds this stack from any folder
    ensure_tokens_file(stack.home)  # the gateway's own writer: one definition of tokens.json
    configured_smtp = settings.typed("tools", ToolsSettings).smtp_port
    stack.smtp_port = (
        configured_smtp if configured_smtp and not port_in_use("127.0.0.1", configured_smtp) else free_port()
    )

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            url = stack.start_nats()
        except StoreInUse as exc:
            print(f"Not starting: {exc}.", file=sys.stderr)
            return 2
        await stack.provision(url)
        stack.build_children(url)
        stack.write_stack_file(url)
        try:
            return await _supervise(stack, url, stop, ready_timeout)
        finally:
            print("Stopping the stack…")
            stack.stop_all()
            print("Stopped.")

    return asyncio.run(main())


def read_stack_file(settings: Settings | None = None) -> dict[str, Any] | None:
    settings = settings or load_settings()
    path = settings.home / "stack.json"
    if not path.is_file():
        return None
    return dict(json.loads(path.read_text(encoding="utf-8")))


def collect_status(settings: Settings | None = None) -> dict[str, Any]:
    """Each service's health (up/down, consumer lag, relay backlog) from the running stack."""
    settings = settings or load_settings()
    info = read_stack_file(settings)
    if info is None:
        return {"running": False, "services": {s: {"status": "down"} for s in SERVICES}}
    reader = Keyring(keys_dir(settings.home)).find(READER)
    subjects = Subjects(info.get("namespace", "overseer"))
    try:
        health = asyncio.run(
            asyncio.wait_for(
                _health_all(
                    info["nats_url"], reader, subjects, reconnect=False, partitions=info.get("partitions")
                ),
                timeout=STATUS_TIMEOUT,
            )
        )
    except (TimeoutError, OSError, NatsError) as exc:
        reason = f"the event bus at {info['nats_url']} did not answer within {STATUS_TIMEOUT:.0f}s"
        if not isinstance(exc, TimeoutError):
            reason = f"the event bus at {info['nats_url']} is unreachable: {exc or type(exc).__name__}"
        return {
            "running": True,
            "gateway_url": info.get("gateway_url"),
            "nats_url": info["nats_url"],
            "bus_error": reason,
            "services": {s: {"status": "down", "error": reason} for s in SERVICES},
        }
    return {
        "running": True,
        "gateway_url": info.get("gateway_url"),
        "nats_url": info["nats_url"],
        "services": health,
    }


def replicas(settings: Settings, **asked: int | None) -> dict[str, int]:
    """How many processes of each partitioned service to run: as ``asked`` (service → count), else as
    configured (``[partitions]``)."""
    return {service: asked.get(service) or count for service, count in settings.partition_counts().items()}


def _process_rows(services: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """One row per process: a service, or each replica of a service running as several partitions."""
    rows: list[tuple[str, dict[str, Any]]] = []
    for service in SERVICES:
        health = dict(services.get(service, {}))
        replicas = health.get("partitions") or {str(0): health}
        rows += [(instance_name(service, int(index)), dict(h)) for index, h in sorted(replicas.items())]
    return rows


def print_status() -> int:
    """Render :func:`collect_status` as a table; exit code 0 only when every service is up."""
    from rich.console import Console
    from rich.table import Table

    status = collect_status()
    console = Console()
    if not status["running"]:
        home = load_settings().home.resolve()
        console.print(
            f"[red]No stack is running[/red] in {home} (it has no stack.json). Start one with `overseer up`, "
            "or set OVERSEER_HOME to the home of the stack that runs."
        )
        return 1
    if status.get("bus_error"):
        console.print(f"[red]{status['bus_error']}[/red]; the supervisor restarts an embedded nats-server.")
    table = Table(title=f"Overseer stack — gateway {status['gateway_url']}, NATS {status['nats_url']}")
    for column in ("service", "state", "pid", "consumer lag", "relay backlog", "events"):
        table.add_column(column)
    all_up = True
    for name, h in _process_rows(status["services"]):
        up = bool(h.get("ready")) and h.get("status", "ok") == "ok"
        all_up &= up
        if up:
            state = "[green]up[/green]"
        elif h.get("ready"):  # running, but something it needs is failing (its store, say)
            reason = (h.get("store") or {}).get("error") or h.get("status")
            state = f"[yellow]degraded[/yellow]: {reason}"
        else:
            state = "[red]down[/red]"
        table.add_row(
            name,
            state,
            str(h.get("pid", "-")),
            str(h.get("consumer_lag", "-")),
            str(h.get("relay_backlog", "-")),
            str(h.get("events", "-")),
        )
    console.print(table)
    planner = (status["services"].get("reasoning", {}).get("details") or {}).get("planner")
    if planner:
        details = status["services"]["reasoning"]["details"]
        if planner == "model":
            console.print(
                f"The agent plans with the model {details.get('model')} at {details.get('base_url')}."
            )
            for node in ("normalise", "emotion"):
                reader = details.get(f"{node}_model") or "the built-in rules"
                console.print(f"  The {node} node reads the message with {reader}.")
        else:
            console.print(
                f"The agent plans offline, without a model: {details.get('why', 'none configured')}."
            )
    return 0 if all_up else 1
