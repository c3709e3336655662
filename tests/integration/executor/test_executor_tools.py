"""The tools on real parts: the sandbox file system, a real SMTP server, a real shell, mcp-server-time."""

from __future__ import annotations

import asyncio
import email
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_executor.adapters.tools.email import EmailTool
from overseer_executor.adapters.tools.fs import FsTools
from overseer_executor.adapters.tools.mcp import McpServerTools
from overseer_executor.adapters.tools.registry import ToolRegistry
from overseer_executor.adapters.tools.shell import ShellTool
from overseer_executor.domain.tools import ToolCall, ToolError, TransientToolError, UnknownTool
from tests.integration.executor.executor_support import child_pids


def call(name: str, **args: object) -> ToolCall:
    return ToolCall(name, dict(args), execution_id="exec-t", session_id="s")


# -- fs.* ------------------------------------------------------------------------------------------
async def test_fs_tools_write_read_and_list_inside_the_sandbox(tmp_path: Path) -> None:
    fs = FsTools(tmp_path / "sandbox")
    assert (
        await fs.execute(call("fs.write", path="notes/a.txt", content="héllo"))
        == "wrote 6 bytes to notes/a.txt"
    )
    assert await fs.execute(call("fs.read", path="notes/a.txt")) == "héllo"
    listing = orjson.loads(await fs.execute(call("fs.list", path="notes")))
    assert listing == [{"name": "a.txt", "type": "file", "size": 6}]


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "a/../../b"])
async def test_fs_tools_refuse_paths_outside_the_sandbox(tmp_path: Path, path: str) -> None:
    fs = FsTools(tmp_path / "sandbox")
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path=path))


async def test_fs_tools_refuse_a_symlink_that_escapes_the_sandbox(tmp_path: Path) -> None:
    fs = FsTools(tmp_path / "sandbox")
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", tmp_path / "sandbox" / "link.txt")
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path="link.txt"))


async def test_fs_tools_follow_a_symlink_that_stays_inside_the_sandbox(tmp_path: Path) -> None:
    fs = FsTools(tmp_path / "sandbox")
    (tmp_path / "sandbox" / "real.txt").write_text("inside")
    os.symlink(tmp_path / "sandbox" / "real.txt", tmp_path / "sandbox" / "alias.txt")
    assert await fs.execute(call("fs.read", path="alias.txt")) == "inside"


async def test_fs_reads_a_configured_readable_directory_but_never_writes_there(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.txt").write_text("read me")
    fs = FsTools(tmp_path / "sandbox", readable=(docs,))
    assert await fs.execute(call("fs.read", path=str(docs / "guide.txt"))) == "read me"
    assert orjson.loads(await fs.execute(call("fs.list", path=str(docs))))[0]["name"] == "guide.txt"
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.write", path=str(docs / "guide.txt"), content="overwritten"))
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path=str(docs / ".." / "secret.txt")))
    assert (docs / "guide.txt").read_text() == "read me"


async def test_fs_read_of_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    fs = FsTools(tmp_path / "sandbox")
    with pytest.raises(ToolError, match=r"no such file: nope\.txt"):
        await fs.execute(call("fs.read", path="nope.txt"))


# -- email.send over real SMTP ---------------------------------------------------------------------
async def test_email_send_delivers_one_message_to_the_smtp_sink(tmp_path: Path) -> None:
    async with SmtpSink(tmp_path / "mail", port=0) as sink:
        tool = EmailTool("127.0.0.1", sink.port, "overseer@localhost")
        result = await tool.execute(
            call("email.send", to="bob@example.com", subject="Meeting", body="At 10?")
        )
        assert result == "sent to bob@example.com (Message-ID <exec-t@overseer>)"
        (stored,) = sink.messages()
    message = email.message_from_bytes(stored.read_bytes())
    assert message["To"] == "bob@example.com"
    assert message["Subject"] == "Meeting"
    assert message["X-Overseer-Execution-Id"] == "exec-t"
    assert message["X-Sink-Rcpt-To"] == "bob@example.com"
    payload = message.get_payload()
    assert isinstance(payload, str), payload
    assert payload.strip() == "At 10?"


async def test_email_send_to_a_stopped_sink_is_a_transient_connection_error(tmp_path: Path) -> None:
    sink = SmtpSink(tmp_path / "mail", port=0)
    await sink.start()
    port = sink.port
    await sink.stop()
    tool = EmailTool("127.0.0.1", port, "overseer@localhost", timeout_seconds=2)
    with pytest.raises(TransientToolError, match="Connection refused"):
        await tool.execute(call("email.send", to="bob@example.com", subject="x", body="y"))


def test_the_sink_runs_as_a_module_with_a_port(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "overseer_executor.adapters.smtp_sink", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--port" in out.stdout


# -- shell.run -----------------------------------------------------------------------------------------
async def test_shell_run_runs_in_the_sandbox_directory(tmp_path: Path) -> None:
    shell = ShellTool(tmp_path / "sandbox")
    result = orjson.loads(await shell.execute(call("shell.run", command="pwd; echo hi >&2")))
    assert result["exit_code"] == 0
    assert result["stdout"].strip() == str((tmp_path / "sandbox").resolve())
    assert result["stderr"].strip() == "hi"


async def test_shell_run_fails_on_a_non_zero_exit_status(tmp_path: Path) -> None:
    shell = ShellTool(tmp_path / "sandbox")
    with pytest.raises(ToolError, match="exit status 3: boom"):
        await shell.execute(call("shell.run", command="echo boom >&2; exit 3"))


async def test_shell_run_kills_a_command_past_its_time_limit(tmp_path: Path) -> None:
    shell = ShellTool(tmp_path / "sandbox", time_limit_seconds=0.3)
    marker = tmp_path / "sandbox" / "late.txt"
    with pytest.raises(ToolError, match="time limit"):
        await shell.execute(call("shell.run", command=f"sleep 2 && touch {marker}"))
    await asyncio.sleep(2.2)  # the killed group must not have lived on to finish its work
    assert not marker.exists()


# -- the registry ----------------------------------------------------------------------------------------
async def test_the_registry_validates_arguments_against_the_tool_schema(tmp_path: Path) -> None:
    registry = ToolRegistry([FsTools(tmp_path / "sandbox")])
    with pytest.raises(ToolError, match=r"invalid arguments for fs\.read"):
        await registry.execute(call("fs.read", file="x"))
    with pytest.raises(UnknownTool):
        await registry.execute(call("fs.delete", path="x"))


def test_the_registry_declares_the_contract_tools_with_their_defaults(tmp_path: Path) -> None:
    registry = ToolRegistry(
        [FsTools(tmp_path / "s"), EmailTool("127.0.0.1", 1, "a@b"), ShellTool(tmp_path / "s")],
        overrides={"fs.write": {"level": "CONFIRM"}},
    )
    specs = {spec.name: spec for spec in registry.specs()}
    assert set(specs) == {"fs.read", "fs.write", "fs.list", "email.send", "shell.run"}
    assert (specs["email.send"].irreversible, specs["email.send"].level) == (True, "APPROVE")
    assert (specs["shell.run"].irreversible, specs["shell.run"].level) == (True, "APPROVE")
    assert (specs["fs.list"].idempotent, specs["fs.list"].level) == (True, "AUTO")
    assert specs["fs.write"].level == "CONFIRM"
    assert specs["email.send"].input_schema["required"] == ["to", "subject", "body"]


# -- MCP: mcp-server-time over stdio -------------------------------------------------------------------
@pytest.fixture
async def time_server(tmp_path: Path) -> AsyncIterator[McpServerTools]:
    server = McpServerTools(
        "time", "mcp-server-time", log_path=tmp_path / "mcp-time.log", health_interval=0.5
    )
    await server.connect()
    yield server
    await server.disconnect()


async def test_mcp_tools_are_named_server_dot_tool_with_their_schemas(time_server: McpServerTools) -> None:
    tools = {t["name"]: t for t in time_server.list_tools()}
    assert set(tools) == {"time.get_current_time", "time.convert_time"}
    assert tools["time.get_current_time"]["input_schema"]["required"] == ["timezone"]
    assert (tools["time.get_current_time"]["idempotent"], tools["time.get_current_time"]["level"]) == (
        True,
        "AUTO",
    )


async def test_a_real_mcp_call_returns_the_current_time(time_server: McpServerTools) -> None:
    text = await time_server.execute(call("time.get_current_time", timezone="UTC"))
    assert orjson.loads(text)["datetime"].endswith("+00:00")


async def test_an_mcp_tool_error_is_a_tool_error(time_server: McpServerTools) -> None:
    with pytest.raises(ToolError, match="Invalid timezone"):
        await time_server.execute(call("time.get_current_time", timezone="Nowhere/Atlantis"))


async def test_a_killed_mcp_server_is_restarted_and_the_next_call_succeeds(
    time_server: McpServerTools,
) -> None:
    (pid,) = child_pids(os.getpid(), "mcp-server-time")
    os.kill(pid, signal.SIGKILL)
    registry = ToolRegistry([time_server])
    # The first call may find the dead connection (transient for this idempotent tool); the server comes back.
    for _ in range(50):
        try:
            text = await registry.execute(call("time.get_current_time", timezone="UTC"))
            break
        except TransientToolError:
            await asyncio.sleep(0.2)
    assert orjson.loads(text)["timezone"] == "UTC"
    assert time_server.starts == 2
    assert child_pids(os.getpid(), "mcp-server-time") != [pid]
