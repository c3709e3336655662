"""An OpenAI Agents SDK agent whose tools are Overseer's, through its MCP proxy.

The agent is given one MCP server: ``overseer mcp``, started over stdio. It sees the tools the stack offers
(the built-ins and every MCP server configured there), and every call it makes goes through Overseer's
firewall: it runs, waits for a person's approval (approve it in ``overseer approvals`` or the console), or
is refused with the reason, which the model reads as the tool's answer.

Run it against a running stack (``overseer up``), with any OpenAI-compatible model::

    OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-… OVERSEER_LLM_MODEL=gpt-4.1-mini \\
        python examples/openai_agents_mcp/agent.py "What time is it in Tokyo?"

``OVERSEER_HOME`` (or ``overseer mcp``'s ``--url`` and ``--token``, in ``OVERSEER_MCP_ARGS``) says which
stack; the proxy acts as the stack's agent token.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import sys
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio
from openai import AsyncOpenAI

INSTRUCTIONS = (
    "You help the user with the tools you have. Every tool call goes through a firewall: it may be held for "
    "the user's approval or refused; tell the user what really happened."
)


def overseer_command() -> list[str]:
    """``overseer mcp`` (the one next to this Python when it is not on PATH), with OVERSEER_MCP_ARGS."""
    overseer = shutil.which("overseer") or str(Path(sys.executable).parent / "overseer")
    return [overseer, "mcp", *shlex.split(os.environ.get("OVERSEER_MCP_ARGS", ""))]


async def ask(question: str, *, approval_seconds: float = 300.0) -> str:
    """The agent's final answer to ``question``."""
    set_tracing_disabled(True)  # nothing is sent to OpenAI's tracing service
    model = OpenAIChatCompletionsModel(
        model=os.environ.get("OVERSEER_LLM_MODEL", "gpt-4.1-mini"),
        openai_client=AsyncOpenAI(base_url=os.environ.get("OPENAI_BASE_URL")),
    )
    command, *args = overseer_command()
    overseer = MCPServerStdio(
        params={"command": command, "args": args, "env": dict(os.environ)},
        name="overseer",
        client_session_timeout_seconds=approval_seconds,  # a held call waits for a person
    )
    async with overseer:
        agent = Agent(name="assistant", instructions=INSTRUCTIONS, mcp_servers=[overseer], model=model)
        result = await Runner.run(agent, question)
    return str(result.final_output)


if __name__ == "__main__":
    print(asyncio.run(ask(" ".join(sys.argv[1:]) or "What time is it in UTC?")))
