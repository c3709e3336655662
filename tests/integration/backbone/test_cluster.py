"""A three-node JetStream cluster on loopback: R3 streams survive the loss of a node."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_runtime.launcher import EmbeddedCluster
from overseer_runtime.testing import NatsUnderTest, Stack, eventually
from tests.support.toy import Replier, Sender, replies, seen

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    nodes = EmbeddedCluster(tmp_path / "cluster").start()
    yield nodes
    nodes.stop()


async def test_services_carry_on_when_a_node_of_a_three_node_cluster_dies(
    tmp_path: Path, cluster: EmbeddedCluster
) -> None:
    nats = NatsUnderTest(url=cluster.url, keyring=cluster.keyring)
    stack = Stack(
        home=tmp_path / "home", nats=nats, overrides={"nats": {"replicas": 3, "heartbeat_seconds": 0.3}}
    )
    sender = Sender()
    # JetStream needs a meta leader before streams can be created; the runtime retries until it has one.
    async with stack.runtime(sender) as gw, stack.runtime(Replier()) as rs:
        info = await gw.js.stream_info(stack.subjects.events_stream)
        assert info.config.num_replicas == 3
        for i in range(20):
            await gw.execute(sender.saying("s", f"before-{i}"))
        await eventually(lambda: replies(rs.store.conn) == 20, timeout=20)
        connected = gw.nc.connected_url
        assert connected is not None
        victim = cluster.client_ports.index(int(str(connected.port)))
        cluster.kill_node(victim)  # the node the gateway is connected to
        for i in range(20):
            await gw.execute(sender.saying("s", f"after-{i}"))
        await eventually(lambda: replies(rs.store.conn) == 40, timeout=60)
        texts = seen(rs.store.conn)
        assert sorted(texts) == sorted([f"before-{i}" for i in range(20)] + [f"after-{i}" for i in range(20)])
