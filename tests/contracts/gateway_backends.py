"""The gateway's ports two ways for its contract suites: in memory (tests/fakes/gateway.py), and the real
adapters of a :class:`GatewayService` running on a real nats-server with its own SQLite store.

Each ``test_gateway_<port>.py`` builds a :class:`GatewayBackend` per parameter and runs the same
tests against both.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from overseer_events.catalogue import MessageReceived
from overseer_events.envelope import Envelope
from overseer_gateway.adapters.tokens import TokenRegistry, tokens_path
from overseer_gateway.application.ports import Callers, LiveEvents, Peers, Transactions
from overseer_gateway.bootstrap import GatewayService
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.settings import PrincipalSettings
from overseer_runtime.rpc import RpcError, RpcRequest, RpcTable
from overseer_runtime.service import Service
from overseer_runtime.testing import Stack, eventually
from tests.fakes.gateway import InMemoryCallers, InMemoryGateway, InMemoryPeers

BACKENDS = ["fake", "real"]
# The one other service running next to the gateway in the peers' contract, and its methods.
PEER = "observer"


def echo(payload: dict[str, Any]) -> Any:
    return {"text": payload["text"]}


def refuse(payload: dict[str, Any]) -> Any:
    raise RpcError(409, f"{payload['text']} is refused", {"legal_triggers": ["wait", "block"]})


PEER_METHODS: dict[str, Callable[[dict[str, Any]], Any]] = {"echo": echo, "refuse": refuse}


class Text(RpcRequest):
    text: str


class Peer(Service):
    """A service answering :data:`PEER_METHODS` over the real runtime's RPC."""

    name = PEER

    def rpc(self) -> RpcTable:
        table = RpcTable()
        for method, answer in PEER_METHODS.items():

            async def call(request: Text, answer: Callable[[dict[str, Any]], Any] = answer) -> Any:
                return answer(request.model_dump())

            table.method(method, Text, call)
        return table


@dataclass
class GatewayBackend:
    """The gateway's ports, and what a test needs to see through them."""

    transactions: Transactions
    live: LiveEvents
    peers: Peers
    committed: Callable[[], list[Envelope]]
    relayed: Callable[[], Awaitable[None]]  # returns once every committed event is in the stream

    async def say(self, session_id: str, text: str) -> Envelope:
        """Commit one of the gateway's own events (``conversation.message_received``)."""
        return await self.transactions.execute(
            lambda unit: unit.emit_as("gateway:test")(
                MessageReceived(session_id=session_id, text=text),
                aggregate_id=f"session:{session_id}",
                correlation_id=session_id,
            )
        )


@asynccontextmanager
async def gateway_backend(kind: str, stack: Stack) -> AsyncIterator[GatewayBackend]:
    if kind == "fake":
        store = InMemoryGateway(stack.subjects)
        peers = InMemoryPeers(
            methods={(PEER, name): answer for name, answer in PEER_METHODS.items()}, running={PEER}
        )

        async def nothing_to_wait_for() -> None:
            return None

        yield GatewayBackend(store, store.stream, peers, lambda: list(store.events), nothing_to_wait_for)
        return
    async with AsyncExitStack() as running:
        await running.enter_async_context(stack.runtime(Peer()))
        service = GatewayService()
        runtime = await running.enter_async_context(stack.runtime(service, gateway={"port": 0}))

        def committed() -> list[Envelope]:
            return [stored.envelope() for stored in runtime.store.read(origin="local")]

        async def relayed() -> None:
            await eventually(lambda: runtime.store.relay_backlog() == 0)

        yield GatewayBackend(service, service.live, service.peers, committed, relayed)


# -- who calls: no bus needed ---------------------------------------------------------------------
ROLES = ("admin", "operator", "agent", "viewer")


@dataclass
class CallersBackend:
    callers: Callers
    tokens: dict[str, str]  # name -> its token


def fake_callers() -> CallersBackend:
    tokens = {name: f"token-of-{name}-0123456789" for name in (*ROLES, "alice")}
    callers = {tokens[role]: Caller(role, Role(role)) for role in ROLES}
    callers[tokens["alice"]] = Caller("alice", Role.OPERATOR)
    return CallersBackend(InMemoryCallers(callers), tokens)


def real_callers(home: Path) -> CallersBackend:
    """``tokens.json`` under ``home`` (written with fresh tokens) and a principal named in the settings."""
    alice = PrincipalSettings(role=Role.OPERATOR, token="token-of-alice-0123456789")
    registry = TokenRegistry.load(home, "", {"alice": alice})
    tokens = json.loads(tokens_path(home).read_text()) | {"alice": alice.token}
    return CallersBackend(registry, tokens)
