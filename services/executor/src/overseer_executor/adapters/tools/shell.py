"""``shell.run``: a command in a bubblewrap jail whose only writable host path is the sandbox.

Irreversible, APPROVE by default. An approved command is still an agent's
command, so it never runs on the host as the executor does. It runs under
``bwrap`` (Debian's bubblewrap, installed by ``make``) in fresh user, mount,
PID, IPC, UTS, cgroup and network namespaces:

* it sees ``/usr`` (and the ``/bin``, ``/sbin``, ``/lib*`` links or
  directories) read-only, a handful of harmless ``/etc`` entries
  (:data:`ETC_READ_ONLY`), a synthetic ``/etc/passwd`` and ``/etc/group`` with
  one user, a fresh ``/proc`` and a minimal ``/dev``, a private ``/tmp``
  (a size-capped tmpfs, gone at exit), and the sandbox, read-write, at its own
  path. Nothing else of the host exists for it: not ``OVERSEER_HOME``'s
  ``tokens.json``, ``nats/`` credentials, SQLite stores or logs, not
  ``/etc/passwd``, ``/root`` or ``/home``. The root is remounted read-only.
* it runs as uid/gid 65534 with no capabilities, may not create user
  namespaces of its own (``--disable-userns``) and has no network unless
  the tool is built with ``network=True`` (then it shares the host's, and sees
  ``/etc/resolv.conf``, ``/etc/hosts`` and the CA certificates).
* the environment is cleared and set to ``PATH``, ``HOME`` (the sandbox),
  ``LANG`` and ``OVERSEER_SANDBOX``.
* at the time limit, or when the call is cancelled, the namespace's init is
  killed, which makes the kernel kill every process in the PID namespace
  (a ``setsid`` or double-forked child included), and the call returns only
  once it is gone. ``--die-with-parent`` does the same if the executor dies.

If the jail cannot be created (no ``bwrap``, no user namespaces, a sandbox
lying inside a directory the jail shows read-only), the call fails: the
command never runs unjailed. A non-zero exit status fails the call with the
tail of stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from overseer_executor.adapters.tools.base import StaticToolPlugin
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec

MAX_OUTPUT_CHARS = 8000

JAIL_UID = 65534
JAIL_USER = "overseer"
JAIL_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
TMP_BYTES = 64 * 1024 * 1024
# Host directories shown read-only, when present: programs and their libraries.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The only host /etc entries the jail sees: the dynamic loader's cache, Debian's
# alternatives (awk, editor …), the time zone. No account, host or secret data.
ETC_READ_ONLY = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
)
# Added only when the tool is given the network.
ETC_NETWORK = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates")
# Paths the jail shows itself; the sandbox may lie neither in them nor above them.
JAIL_OWNED = ("/etc", "/proc", "/dev")
KILL_WAIT_SECONDS = 5.0

RUN = ToolSpec(
    name="shell.run",
    description="Run a shell command in the sandbox directory, jailed (no other host files, no network).",
    input_schema={
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "timeout_seconds": {"type": "number", "exclusiveMinimum": 0},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
    irreversible=True,
    level="APPROVE",
    read_only=False,
    destructive=True,
    open_world=False,  # jailed: no network
    time_limit_seconds=30,
)


class JailUnavailable(ToolError):
    """The jail could not be created, so the command did not run."""


def jail_conflict(sandbox: Path) -> str | None:
    """Why ``sandbox`` cannot be the jail's writable directory, or None.

    Inside (or above) a directory the jail shows read-only, the sandbox's
    neighbours (``OVERSEER_HOME``'s secrets) would be visible through it.
    """
    if not sandbox.is_absolute() or sandbox == Path("/"):
        return f"the sandbox {str(sandbox)!r} must be an absolute directory below /"
    for shown in (*SYSTEM_DIRS, *JAIL_OWNED):
        shown_path = Path(shown)
        if sandbox == shown_path or shown_path in sandbox.parents or sandbox in shown_path.parents:
            return f"the sandbox {str(sandbox)!r} overlaps {shown}, which the jail shows to every command"
    return None


@dataclass(frozen=True, slots=True)
class Jail:
    """The bubblewrap command line of one ``shell.run`` call (pure: paths are looked at, never changed)."""

    sandbox: Path
    network: bool = False
    tmp_bytes: int = TMP_BYTES
    lang: str = "C.UTF-8"

    def environment(self) -> dict[str, str]:
        root = str(self.sandbox)
        return {"PATH": JAIL_PATH, "HOME": root, "LANG": self.lang, "OVERSEER_SANDBOX": root}

    def passwd(self) -> bytes:
        return f"{JAIL_USER}:x:{JAIL_UID}:{JAIL_UID}:overseer shell:{self.sandbox}:/bin/sh\n".encode()

    def group(self) -> bytes:
        return f"{JAIL_USER}:x:{JAIL_UID}:\n".encode()

    def argv(self, bwrap: str, command: str, *, info_fd: int, passwd_fd: int, group_fd: int) -> list[str]:
        root = str(self.sandbox)
        args = [
            bwrap,
            "--unshare-all",  # user, mount, pid, ipc, uts, cgroup and network namespaces
            "--unshare-user",  # required, not merely tried: no jail, no command
            "--disable-userns",
            "--uid",
            str(JAIL_UID),
            "--gid",
            str(JAIL_UID),
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "overseer-sandbox",
            "--clearenv",
        ]
        if self.network:
            args.append("--share-net")
        for name, value in self.environment().items():
            args += ["--setenv", name, value]
        args += list(self._system_mounts())
        args += [
            "--ro-bind-data",
            str(passwd_fd),
            "/etc/passwd",
            "--ro-bind-data",
            str(group_fd),
            "/etc/group",
        ]
        args += ["--proc", "/proc", "--dev", "/dev", "--size", str(self.tmp_bytes), "--tmpfs", "/tmp"]
        args += ["--bind", root, root, "--remount-ro", "/", "--chdir", root, "--info-fd", str(info_fd)]
        args += ["--", "/bin/sh", "-c", command]
        return args

    def _system_mounts(self) -> Iterator[str]:
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                yield from ("--symlink", os.readlink(path), path)
            elif os.path.isdir(path):
                yield from ("--ro-bind", path, path)
        for path in ETC_READ_ONLY + (ETC_NETWORK if self.network else ()):
            if os.path.lexists(path):
                yield from ("--ro-bind-try", path, path)


class ShellTool(StaticToolPlugin):
    def __init__(
        self,
        sandbox: Path,
        time_limit_seconds: float = 30.0,
        *,
        network: bool = False,
        bwrap: str = "bwrap",
        tmp_bytes: int = TMP_BYTES,
    ) -> None:
        super().__init__()
        Path(sandbox).mkdir(parents=True, exist_ok=True)
        self.root = Path(sandbox).resolve()
        self.time_limit_seconds = time_limit_seconds
        self.jail = Jail(
            self.root, network=network, tmp_bytes=tmp_bytes, lang=os.environ.get("LANG", "C.UTF-8")
        )
        self.bwrap = bwrap
        self.add(RUN, self.run)

    def environment(self) -> dict[str, str]:
        """What the command's environment holds (nothing of the executor's own)."""
        return self.jail.environment()

    def _bwrap_path(self) -> str:
        conflict = jail_conflict(self.root)
        if conflict is not None:
            raise JailUnavailable(f"shell.run cannot jail its command, so it did not run: {conflict}")
        found = shutil.which(self.bwrap)
        if found is None:
            raise JailUnavailable(
                f"shell.run cannot jail its command, so it did not run: {self.bwrap!r} (bubblewrap) "
                "is not installed (make installs it)"
            )
        return found

    async def run(self, args: dict[str, Any], tc: ToolCall) -> str:
        limit = min(float(args.get("timeout_seconds") or self.time_limit_seconds), self.time_limit_seconds)
        bwrap = self._bwrap_path()
        info_r, info_w = os.pipe()
        passwd_r, passwd_w = os.pipe()
        group_r, group_w = os.pipe()
        try:
            for fd, data in ((passwd_w, self.jail.passwd()), (group_w, self.jail.group())):
                try:
                    os.write(fd, data)  # a few dozen bytes: the pipe holds them
                finally:
                    os.close(fd)
            argv = self.jail.argv(
                bwrap, args["command"], info_fd=info_w, passwd_fd=passwd_r, group_fd=group_r
            )
            creating = asyncio.ensure_future(
                asyncio.create_subprocess_exec(
                    *argv,
                    cwd=self.root,
                    env={},
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,
                    pass_fds=(info_w, passwd_r, group_r),
                )
            )
            # Concurrency hazard: a call cancelled while bwrap is being started must not leave it
            # running in its own session, out of everyone's reach. The start is shielded; a
            # cancellation that arrives meanwhile ends the jail below like any cancelled call's.
            try:
                process = await asyncio.shield(creating)
                cancelled = False
            except asyncio.CancelledError:
                process = await creating
                cancelled = True
        except BaseException:
            os.close(info_r)
            raise
        finally:
            for fd in (info_w, passwd_r, group_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
        init = _NamespaceInit(info_r)
        try:
            if cancelled:
                raise asyncio.CancelledError
            stdout, stderr = await asyncio.wait_for(init.communicate(process), limit)
        except TimeoutError:
            raise ToolError(f"shell command exceeded its time limit of {limit:g}s and was killed") from None
        finally:
            if process.returncode is None:
                # Timed out or cancelled: kill the namespace's init (the kernel then kills every
                # process in the PID namespace), and bwrap's own group; return once all are gone.
                with contextlib.suppress(Exception):
                    await asyncio.shield(init.kill_and_wait(process))
            init.close()
        out = stdout.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
        err = stderr.decode("utf-8", errors="replace")[-MAX_OUTPUT_CHARS:]
        if process.returncode != 0:
            if err.startswith("bwrap:"):  # bwrap's own complaint: the jail was not made
                raise JailUnavailable(
                    f"shell.run could not create its jail, so the command did not run: {err.strip()[:500]}"
                )
            raise ToolError(f"exit status {process.returncode}: {err.strip()[-500:] or out.strip()[-500:]}")
        return orjson.dumps({"exit_code": process.returncode, "stdout": out, "stderr": err}).decode()


class _NamespaceInit:
    """The jail's PID-namespace init, as bwrap reports it on ``--info-fd``, held by a pidfd."""

    def __init__(self, info_fd: int) -> None:
        self.info_fd = info_fd
        self.info = bytearray()  # what bwrap wrote so far: kept if a read is cancelled halfway
        self.pidfd: int | None = None
        self.started = False

    async def communicate(self, process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
        await self.open()
        return await process.communicate()

    async def open(self) -> None:
        """Read ``{"child-pid": N, …}`` (EOF without it: bwrap failed before creating the jail)."""
        await _read_to_eof(self.info_fd, self.info)
        os.close(self.info_fd)
        self.info_fd = -1
        with contextlib.suppress(ValueError, TypeError, KeyError, orjson.JSONDecodeError):
            pid = int(orjson.loads(self.info)["child-pid"])
            self.started = True
            with contextlib.suppress(ProcessLookupError):
                self.pidfd = os.pidfd_open(pid)

    async def kill_and_wait(self, process: asyncio.subprocess.Process) -> None:
        if self.info_fd >= 0:
            # Cancelled before bwrap's report was read: read it now (a jail that exists has written
            # it), or killing bwrap alone leaves its namespace to die after this returns.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.open(), KILL_WAIT_SECONDS)
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await asyncio.wait_for(process.wait(), KILL_WAIT_SECONDS)
        if self.pidfd is not None:
            # Readable once the init has exited, which the kernel allows only after
            # every other process of its namespace is gone.
            await asyncio.wait_for(_readable(self.pidfd), KILL_WAIT_SECONDS)

    def close(self) -> None:
        for fd in (self.info_fd, self.pidfd):
            if fd is not None and fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.info_fd, self.pidfd = -1, None


async def _read_to_eof(fd: int, into: bytearray) -> None:
    """Everything written to the pipe ``fd`` until its last writer closes it, appended to ``into``,
    without blocking the loop (a cancelled read keeps what it had read there)."""
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            await _readable(fd)
            continue
        if not chunk:
            return
        into += chunk


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)
