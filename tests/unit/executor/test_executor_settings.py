"""The executor's typed settings read overseer.toml's defaults, the user's changes, and refuse typos."""

from __future__ import annotations

from pathlib import Path

import pytest

from overseer_executor.settings import ExecutorSettings, McpSettings, ToolsSettings
from overseer_runtime.config import ConfigurationError, Settings, load_settings


def settings(tmp_path: Path, **env: str) -> Settings:
    return load_settings(env={"OVERSEER_HOME": str(tmp_path), **env})


def test_the_packaged_defaults_fill_every_field(tmp_path: Path) -> None:
    loaded = settings(tmp_path)
    executor = loaded.typed("executor", ExecutorSettings)
    assert (executor.tool_timeout_seconds, executor.retry_attempts, executor.drain_seconds) == (30, 3, 10)
    tools = loaded.typed("tools", ToolsSettings)
    assert (tools.sandbox, tools.readable_paths, tools.overrides) == ("sandbox", (), {})
    assert tools.smtp_endpoint == ("127.0.0.1", 8025)
    mcp = loaded.typed("mcp", McpSettings)
    assert mcp.servers["time"].command == "mcp-server-time"
    assert mcp.servers["time"].enabled is True


def test_an_environment_override_is_read_with_its_type(tmp_path: Path) -> None:
    loaded = settings(
        tmp_path, OVERSEER_EXECUTOR__RETRY_BASE_SECONDS="0.01", OVERSEER_TOOLS__EMAIL__PORT="2525"
    )
    assert loaded.typed("executor", ExecutorSettings).retry_base_seconds == 0.01
    assert loaded.typed("tools", ToolsSettings).smtp_endpoint == ("127.0.0.1", 2525)


def test_the_dev_sinks_port_wins_over_the_configured_one(tmp_path: Path) -> None:
    loaded = settings(tmp_path, OVERSEER_TOOLS__SMTP_PORT="40123")
    assert loaded.typed("tools", ToolsSettings).smtp_endpoint == ("127.0.0.1", 40123)


def test_a_misspelt_key_is_refused_naming_its_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"executor\.retry_atempts: unknown setting"):
        settings(tmp_path, OVERSEER_EXECUTOR__RETRY_ATEMPTS="5")


def test_an_mcp_server_table_needs_only_its_command(tmp_path: Path) -> None:
    (tmp_path / "overseer.toml").write_text(
        '[mcp.servers.echo]\ncommand = "echo-server"\nargs = ["--port", 8080]\nenv = { DEBUG = 1 }\n'
    )
    echo = settings(tmp_path).typed("mcp", McpSettings).servers["echo"]
    assert (echo.command, echo.args, echo.env) == ("echo-server", ("--port", 8080), {"DEBUG": 1})
    assert (echo.enabled, echo.cwd, echo.time_limit_seconds, echo.tools) == (True, None, None, {})
