"""What the MCP proxy adds to an MCP call the firewall allows at once, against calling the MCP server directly.

    python bench/mcp_proxy.py [mcp_proxy] [--calls N]

* ``mcp_proxy``: ``time.get_current_time`` (read-only, so AUTO) through ``/mcp`` on the gateway
  (streamable HTTP, the official ``mcp`` client, every service in its own process on a real nats-server:
  the proposal, the firewall's verdict, the executor's call of ``mcp-server-time`` over stdio, the
  observer's view) against ``get_current_time`` on ``mcp-server-time`` itself over stdio, with the same
  client; the firewall's loop detection and stagnation breaker are set out of the way (the benchmark
  repeats one call, which gets the same answer). At concurrency 1 the two sides run in alternating blocks (the machine's drift touches both
  alike); at 16, one block each. Each line reports both sides' medians and the median added (goal at
  concurrency 1: at most 3 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx2  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.common import drive, emit, percentile, stack_processes  # noqa: E402

BLOCK = 25
WARM_UP = 20
Call = Callable[[], Awaitable[float]]


@asynccontextmanager
async def direct() -> AsyncIterator[ClientSession]:
    """A session with ``mcp-server-time`` itself, over stdio."""
    command = str(Path(sys.executable).parent / "mcp-server-time")
    async with (
        stdio_client(StdioServerParameters(command=command)) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        yield s


@asynccontextmanager
async def proxied(url: str, token: str) -> AsyncIterator[ClientSession]:
    """A session with the proxy at ``url``/mcp, as the agent."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60)) as http,
        streamable_http_client(f"{url}/mcp?session=bench-mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def timed(session: ClientSession, tool: str) -> Call:
    async def call() -> float:
        started = time.perf_counter()
        result = await session.call_tool(tool, {"timezone": "UTC"})
        if result.is_error:
            raise RuntimeError(f"{tool}: {result.content}")
        return time.perf_counter() - started

    return call


UNLOOPED = {"same_args = 3 ": "same_args = 1000000 ", "same_tool = 8 ": "same_tool = 1000000 ",
            "stagnation = 2 ": "stagnation = 1000000 "}  # fmt: skip


def unlooped_policy(work: Path) -> Path:
    """The default admin policy with loop detection and the stagnation breaker out of the way: one client
    calling one tool with the same arguments hundreds of times a minute, getting the same answer, is
    exactly what the firewall holds (rightly, outside a benchmark)."""
    text = (ROOT / "services/firewall/src/overseer_firewall/default_policy.toml").read_text()
    for before, after in UNLOOPED.items():
        if before not in text:
            raise RuntimeError(f"the default policy no longer has {before.strip()!r}: update UNLOOPED")
        text = text.replace(before, after)
    path = work / "policy.toml"
    path.write_text(text)
    return path


async def measure(calls: int) -> list[dict[str, float | int | str]]:
    with tempfile.TemporaryDirectory() as work:
        policy = unlooped_policy(Path(work))
        async with (
            stack_processes(Path(work), firewall={"policy_file": str(policy)}) as stack,
            direct() as server,
            proxied(stack.url, stack.tokens["agent"]) as proxy,
        ):
            plain, through = timed(server, "get_current_time"), timed(proxy, "time__get_current_time")
            for _ in range(WARM_UP):
                await plain()
                await through()
            plain_times: list[float] = []
            proxy_times: list[float] = []
            while len(plain_times) < calls:
                plain_times += [await plain() for _ in range(BLOCK)]
                proxy_times += [await through() for _ in range(BLOCK)]
            lines = [summary(1, plain_times, proxy_times)]
            plain16, _ = await drive(calls, 16, lambda _: plain())
            proxy16, elapsed = await drive(calls, 16, lambda _: through())
            lines.append({**summary(16, plain16, proxy16), "proxy_calls_per_s": round(calls / elapsed, 1)})
            return lines


def summary(concurrency: int, plain: list[float], proxied: list[float]) -> dict[str, float | int | str]:
    plain_p50, proxy_p50 = statistics.median(plain) * 1000, statistics.median(proxied) * 1000
    return {
        "scenario": "mcp_proxy",
        "concurrency": concurrency,
        "calls": len(proxied),
        "direct_p50_ms": round(plain_p50, 3),
        "proxy_p50_ms": round(proxy_p50, 3),
        "proxy_p99_ms": round(percentile(proxied, 0.99) * 1000, 3),
        "added_p50_ms": round(proxy_p50 - plain_p50, 3),
        "goal_added_p50_ms": 3.0,
    }


async def main(scenarios: list[str], calls: int) -> None:
    if not scenarios or "mcp_proxy" in scenarios:
        for line in await measure(calls):
            emit(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("scenarios", nargs="*", help="mcp_proxy (default)")
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(main(args.scenarios, args.calls))
