"""How soon a held call reaches a person through the approval channels.

    python bench/channels.py [approval_notice] [--calls N]

* ``approval_notice``: an agent proposes ``email.send`` (APPROVE: held) over REST, every service in its
  own process on a real nats-server; the admin policy routes held calls to a webhook (a real HTTP server
  in this process) and to a mail list (a real SMTP server in this process). Each line reports, per
  channel, the median and p99 time from the proposal's ``202`` to the notice's arrival (goal: within a
  second), and how many arrived.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import orjson  # noqa: E402
from aiosmtpd.smtp import SMTP, Envelope, Session  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

from bench.common import emit, percentile, stack_processes  # noqa: E402
from tests.support.asgi_server import serving  # noqa: E402

GOAL_MS = 1000.0


class Arrivals:
    """When each execution's notice reached each channel (perf_counter seconds)."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str], float] = {}
        self.changed = asyncio.Event()

    def arrived(self, channel: str, execution_id: str) -> None:
        self.at.setdefault((channel, execution_id), time.perf_counter())
        self.changed.set()

    async def hook(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        self.arrived("webhook", str(body["execution_id"]))
        return Response(status_code=204)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content or b""
        text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        for line in text.splitlines():
            if line.startswith("Execution:"):
                self.arrived("email", line.split(":", 1)[1].strip())
        return "250 OK"


async def measure(calls: int) -> list[dict[str, Any]]:
    arrivals = Arrivals()
    loop = asyncio.get_running_loop()
    smtp = await loop.create_server(lambda: SMTP(arrivals, hostname="bench-sink"), "127.0.0.1", 0)
    mail = {"host": "127.0.0.1", "port": int(smtp.sockets[0].getsockname()[1]), "sender": "o@localhost"}
    try:
        async with serving(Starlette(routes=[Route("/hook", arrivals.hook, methods=["POST"])])) as hook:
            channels = {
                "smtp": {**mail, "timeout_seconds": 5},
                "webhook": {"ops": {"url": f"{hook}/hook", "secret": "bench-secret-0123456789"}},
                "email": {"approvers": {"to": {"operator": "ops@example.com"}}},
            }
            with tempfile.TemporaryDirectory() as work:
                async with stack_processes(Path(work), channels=channels) as stack:
                    await route(stack.url, stack.tokens["admin"])
                    latencies = await propose(stack.url, stack.tokens["agent"], calls, arrivals)
    finally:
        smtp.close()
    return [summary(channel, values, calls) for channel, values in latencies.items()]


async def route(url: str, admin_token: str) -> None:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {admin_token}"}) as admin:
        policy = (await admin.get("/v1/policy")).json()
        document = {k: v for k, v in policy["admin"].items() if k != "version"}
        document["notify"] = [{"channel": "ops"}, {"channel": "approvers"}]
        answer = await admin.put("/v1/policy/admin", json=document)
        answer.raise_for_status()


async def propose(url: str, agent_token: str, calls: int, arrivals: Arrivals) -> dict[str, list[float]]:
    latencies: dict[str, list[float]] = {"webhook": [], "email": []}
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {agent_token}"}) as agent:
        for n in range(calls):
            args = {"to": "bob@example.com", "subject": f"Invoice {n}", "body": "Attached."}
            started = time.perf_counter()
            answer = await agent.post(
                "/v1/actions", json={"session_id": f"bench-{n}", "tool": "email.send", "args": args}
            )
            answer.raise_for_status()
            execution_id = str(answer.json()["execution_id"])
            deadline = started + 10.0
            while time.perf_counter() < deadline and not all(
                (channel, execution_id) in arrivals.at for channel in latencies
            ):
                arrivals.changed.clear()
                try:
                    await asyncio.wait_for(arrivals.changed.wait(), deadline - time.perf_counter())
                except TimeoutError:
                    break
            for channel, values in latencies.items():
                at = arrivals.at.get((channel, execution_id))
                if at is not None:
                    values.append(at - started)
    return latencies


def summary(channel: str, values: list[float], calls: int) -> dict[str, Any]:
    return {
        "scenario": "approval_notice",
        "channel": channel,
        "calls": calls,
        "arrived": len(values),
        "p50_ms": round(statistics.median(values) * 1000, 1) if values else None,
        "p99_ms": round(percentile(values, 0.99) * 1000, 1) if values else None,
        "goal_ms": GOAL_MS,
    }


async def main(scenarios: list[str], calls: int) -> None:
    if not scenarios or "approval_notice" in scenarios:
        for line in await measure(calls):
            emit(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--calls", type=int, default=40)
    options = parser.parse_args()
    asyncio.run(main(options.scenarios, options.calls))
