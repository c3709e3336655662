"""The executor's configuration sections, typed: ``[executor]``, ``[tools]`` and ``[mcp]``.

Every default lives once, documented, in ``overseer_runtime/overseer.toml``; these models declare
none, so a key missing there fails at start instead of falling back to a second copy of it. Read
with ``settings.typed("executor", ExecutorSettings)`` and likewise for the others.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from overseer_runtime.config import Section


class ExecutorSettings(Section):
    """``[executor]``: tool-call limits and retries, the approval TTL and its sweep, the stop drain."""

    tool_timeout_seconds: float
    retry_attempts: int
    retry_base_seconds: float
    retry_max_seconds: float
    approval_ttl_seconds: float
    sweep_interval_seconds: float
    agent_outcome_seconds: float = Field(gt=0)
    max_result_chars: int
    drain_seconds: float
    run_ahead_seconds: float = Field(ge=0)
    announce_running_after_seconds: float = Field(ge=0)


class EmailSettings(Section):
    """``[tools.email]``: the SMTP server ``email.send`` delivers to, and its sender address."""

    host: str
    port: int
    sender: str
    timeout_seconds: float


class ShellSettings(Section):
    """``[tools.shell]``."""

    time_limit_seconds: float


class ToolsSettings(Section):
    """``[tools]``: the built-in tools' sandbox and readable paths, their servers, per-tool overrides."""

    sandbox: str
    readable_paths: tuple[str, ...]
    smtp_port: int
    email: EmailSettings
    shell: ShellSettings
    overrides: dict[str, dict[str, Any]]

    @property
    def smtp_endpoint(self) -> tuple[str, int]:
        """(host, port) of the SMTP server ``email.send`` uses: ``smtp_port``, when set, wins."""
        return self.email.host, self.smtp_port or self.email.port


class McpServerSettings(Section):
    """One ``[mcp.servers.<name>]`` table.

    These tables are the user's own (overseer.toml cannot hold defaults for a server it does not
    name), so the optional keys default here, as overseer.toml's commented example documents.
    """

    command: str
    # TOML scalars, passed to the server process as text (``args = ["--port", 8080]`` is fine).
    args: tuple[str | int | float | bool, ...] = ()
    env: dict[str, str | int | float | bool] = {}
    cwd: str | None = None
    time_limit_seconds: float | None = None
    enabled: bool = True
    tools: dict[str, dict[str, Any]] = {}


class McpSettings(Section):
    """``[mcp]``: how the configured MCP servers are started, watched and restarted."""

    connect_timeout_seconds: float
    restart_backoff_seconds: float
    restart_backoff_max_seconds: float
    health_interval_seconds: float
    servers: dict[str, McpServerSettings]
