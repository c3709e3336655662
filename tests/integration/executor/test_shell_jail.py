"""shell.run's jail, on the real tool: a real bwrap, real processes, real files in a real OVERSEER_HOME.

The home holds what a stack keeps there (``tokens.json``, ``nats/keys/*.nk``,
SQLite stores, logs) with a random secret in each; an approved command must
never see any of it, nor the host's ``/etc/passwd``, nor write anywhere but
the sandbox, nor leave a process behind.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from pathlib import Path

import orjson
import pytest

from overseer_executor.adapters.tools.shell import JailUnavailable, ShellTool, jail_conflict
from overseer_executor.domain.tools import ToolCall, ToolError


def call(command: str, **args: object) -> ToolCall:
    return ToolCall("shell.run", {"command": command, **args}, execution_id="exec-jail", session_id="s")


async def run(shell: ShellTool, command: str) -> dict[str, object]:
    result: dict[str, object] = orjson.loads(await shell.execute(call(command)))
    return result


async def run_any(shell: ShellTool, command: str) -> str:
    """stdout and stderr of ``command``, or the error it failed with: everything it could show."""
    try:
        result = await run(shell, command)
    except ToolError as exc:
        return str(exc)
    return f"{result['stdout']}\n{result['stderr']}"


class Home:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.secret = secrets.token_hex(16)
        self.sandbox = root / "sandbox"
        self.sandbox.mkdir(parents=True)
        (root / "tokens.json").write_text(orjson.dumps({"agent": self.secret}).decode())
        keys = root / "nats" / "keys"
        keys.mkdir(parents=True)
        (keys / "executor.nk").write_text(f"SUA{self.secret}")
        (root / "nats" / "server.conf").write_text(f'authorization {{ password: "{self.secret}" }}')
        (root / "executor.db").write_text(self.secret)
        (root / "logs").mkdir()
        (root / "logs" / "executor.log").write_text(self.secret)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


@pytest.fixture
def shell(home: Home) -> ShellTool:
    return ShellTool(home.sandbox, time_limit_seconds=5)


def host_file(path: str) -> Path:
    """A path on the host, as the test (outside the jail) sees it."""
    return Path(path)


def processes_with(needle: str) -> list[int]:
    """Host processes whose command line contains ``needle``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
        if needle in cmdline:
            found.append(int(entry))
    return found


# -- what the command can see --------------------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "cat ../tokens.json",
        "cat {home}/tokens.json",
        "cat ../nats/keys/*.nk ../nats/server.conf",
        "cat {home}/nats/keys/executor.nk",
        "cat ../executor.db ../logs/executor.log",
        "ls -laR .. {home} {home}/nats",
        "cd .. && cat tokens.json",
        "ln -s ../tokens.json link && cat link",
        "cat /proc/1/root{home}/tokens.json",
    ],
)
async def test_an_approved_shell_cannot_read_any_secret_of_overseer_home(
    shell: ShellTool, home: Home, command: str
) -> None:
    shown = await run_any(shell, command.replace("{home}", str(home.root)))
    assert home.secret not in shown


async def test_an_approved_shell_sees_only_the_sandbox_of_overseer_home(shell: ShellTool, home: Home) -> None:
    listing = await run(shell, f"ls -A {home.root}")
    assert listing["stdout"] == "sandbox\n"
    # A walk of the whole visible tree (every file of /usr included) takes its time on a loaded machine.
    patient = ShellTool(home.sandbox, time_limit_seconds=120)
    search = "find / -path /proc -prune -o \\( -name tokens.json -o -name '*.nk' -o -name executor.db \\) -print 2>/dev/null; true"
    assert (await run(patient, search))["stdout"] == ""


async def test_an_approved_shell_does_not_see_the_hosts_passwd_or_shadow(shell: ShellTool) -> None:
    host_root_line = host_file("/etc/passwd").read_text().splitlines()[0]
    passwd = await run(shell, "cat /etc/passwd")
    assert host_root_line not in str(passwd["stdout"])
    assert passwd["stdout"] == f"overseer:x:65534:65534:overseer shell:{shell.root}:/bin/sh\n"
    assert "No such file" in await run_any(shell, "cat /etc/shadow")
    etc = await run(shell, "ls -A /etc")
    assert set(str(etc["stdout"]).split()) <= {
        "alternatives",
        "group",
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "passwd",
    }


async def test_an_approved_shell_sees_no_home_directories_and_no_environment_of_the_executor(
    shell: ShellTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OVERSEER_SECRET_FOR_TEST", "leak-me")
    env = await run(shell, "env; ls -A /root /home 2>&1 || true")
    assert "leak-me" not in str(env["stdout"])
    names = {line.split("=", 1)[0] for line in str(env["stdout"]).splitlines() if "=" in line}
    assert names <= {"PATH", "HOME", "LANG", "OVERSEER_SANDBOX", "PWD", "SHLVL", "_"}
    assert "No such file" in str(env["stdout"])


async def test_an_approved_shell_runs_as_an_unprivileged_user_with_no_capabilities(shell: ShellTool) -> None:
    ident = await run(shell, "id -u; id -g; grep CapEff /proc/self/status")
    uid, gid, caps = str(ident["stdout"]).splitlines()
    assert (uid, gid) == ("65534", "65534")
    assert caps.split()[1] == "0000000000000000"


async def test_an_approved_shell_has_no_network(shell: ShellTool) -> None:
    connections = 0

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        shown = await run_any(shell, f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo CONNECTED")
        await asyncio.sleep(0.05)
    assert "CONNECTED" not in shown
    assert connections == 0
    interfaces = await run(shell, "cat /proc/net/dev")
    assert [line.split(":")[0].strip() for line in str(interfaces["stdout"]).splitlines()[2:]] == ["lo"]


async def test_a_shell_given_the_network_reaches_the_host(home: Home) -> None:
    shell = ShellTool(home.sandbox, network=True)
    connected = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.set()
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        await run(shell, f"bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'")
        await asyncio.wait_for(connected.wait(), 5)


# -- where the command can write -----------------------------------------------------------------
async def test_an_approved_shell_reads_and_writes_inside_the_sandbox(shell: ShellTool, home: Home) -> None:
    (home.sandbox / "given.txt").write_text("from the host\n")
    result = await run(shell, "cat given.txt; mkdir -p out && echo made > out/new.txt && cat out/new.txt")
    assert result["stdout"] == "from the host\nmade\n"
    assert (home.sandbox / "out" / "new.txt").read_text() == "made\n"
    assert (await run(shell, "pwd"))["stdout"] == f"{home.sandbox.resolve()}\n"


@pytest.mark.parametrize(
    "target",
    [
        "../escape.txt",
        "{home}/escape.txt",
        "{home}/tokens.json",
        "/usr/escape.txt",
        "/escape.txt",
        "/etc/escape",
    ],
)
async def test_an_approved_shell_cannot_write_outside_the_sandbox(
    shell: ShellTool, home: Home, target: str
) -> None:
    path = target.replace("{home}", str(home.root))
    await run_any(shell, f"echo pwned > {path}")
    assert not (home.root / "escape.txt").exists()
    assert home.secret in (home.root / "tokens.json").read_text()
    assert not host_file("/usr/escape.txt").exists()
    assert not host_file("/escape.txt").exists()
    assert not host_file("/etc/escape").exists()


async def test_tmp_inside_the_jail_is_private_and_gone_afterwards(shell: ShellTool) -> None:
    marker = f"overseer-jail-{secrets.token_hex(4)}"
    result = await run(shell, f"echo x > /tmp/{marker} && cat /tmp/{marker}")
    assert result["stdout"] == "x\n"
    assert not host_file(f"/tmp/{marker}").exists()
    assert str((await run(shell, f"ls /tmp/{marker} 2>&1 || echo gone"))["stdout"]).endswith("gone\n")


# -- nothing outlives the call -------------------------------------------------------------------
async def test_a_setsid_child_is_killed_at_the_time_limit(home: Home) -> None:
    shell = ShellTool(home.sandbox, time_limit_seconds=0.5)
    needle = "987.6543"  # a sleep nobody else runs
    task = asyncio.create_task(
        shell.execute(call(f"setsid sleep {needle} & setsid sh -c 'sleep {needle}' & wait"))
    )
    for _ in range(100):  # the children did start, outside the command's own process group
        if len(processes_with(f"sleep {needle}")) >= 2:
            break
        await asyncio.sleep(0.01)
    assert len(processes_with(f"sleep {needle}")) >= 2
    with pytest.raises(ToolError, match=r"time limit of 0\.5s"):
        await task
    assert processes_with(f"sleep {needle}") == []


async def test_a_detached_child_does_not_outlive_a_command_that_exits(shell: ShellTool) -> None:
    needle = "876.5432"
    result = await run(shell, f"setsid sleep {needle} > /dev/null 2>&1 & echo started")
    assert result["stdout"] == "started\n"
    for _ in range(100):
        if not processes_with(f"sleep {needle}"):
            break
        await asyncio.sleep(0.01)
    assert processes_with(f"sleep {needle}") == []


async def test_a_cancelled_call_kills_the_whole_jail(shell: ShellTool) -> None:
    needle = "765.4321"
    task = asyncio.create_task(shell.execute(call(f"setsid sleep {needle} & wait")))
    for _ in range(100):
        if processes_with(f"sleep {needle}"):
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert processes_with(f"sleep {needle}") == []


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 5, 8, 13])
async def test_a_call_cancelled_while_its_jail_starts_leaves_nothing_running(
    shell: ShellTool, turns: int
) -> None:
    needle = f"654.{turns:04d}"
    task = asyncio.create_task(shell.execute(call(f"sleep {needle}")))
    for _ in range(turns):  # the cancellation lands at another point of the start each time
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # bwrap's own command line names the command: a jail started in spite of the cancel shows here.
    assert processes_with(f"sleep {needle}") == []


# -- no jail, no command -------------------------------------------------------------------------
async def test_without_bwrap_the_command_fails_and_never_runs_unjailed(home: Home) -> None:
    shell = ShellTool(home.sandbox, bwrap="overseer-no-such-bwrap")
    with pytest.raises(JailUnavailable, match=r"did not run.*bubblewrap"):
        await shell.execute(call("touch ran.txt"))
    assert not (home.sandbox / "ran.txt").exists()


async def test_a_jail_that_cannot_be_created_fails_the_call_and_runs_nothing(
    home: Home, tmp_path: Path
) -> None:
    # A bwrap that fails the way it does without user namespaces.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    shell = ShellTool(home.sandbox, bwrap=str(fake))
    with pytest.raises(JailUnavailable, match=r"could not create its jail.*No permissions"):
        await shell.execute(call("touch ran.txt"))
    assert not (home.sandbox / "ran.txt").exists()


@pytest.mark.parametrize("sandbox", ["/", "/usr/local/overseer/sandbox", "/etc/overseer", "/proc/x", "/lib"])
def test_a_sandbox_the_jail_would_show_read_only_is_refused(sandbox: str) -> None:
    assert jail_conflict(Path(sandbox)) is not None


def test_an_ordinary_sandbox_is_accepted(home: Home) -> None:
    assert jail_conflict(home.sandbox.resolve()) is None
