"""Shared fixtures: a real nats-server for the session, and a fresh stack (home + namespace) per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from overseer_runtime.testing import NatsUnderTest, Stack, start_nats_under_test


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsUnderTest]:
    server = start_nats_under_test(tmp_path_factory.mktemp("nats"))
    yield server
    server.stop()


@pytest.fixture
def nats_url(nats_server: NatsUnderTest) -> str:
    return nats_server.url


@pytest.fixture
def stack(tmp_path: Path, nats_server: NatsUnderTest) -> Stack:
    """A fresh OVERSEER_HOME and subject namespace on the session's nats-server."""
    return Stack(home=tmp_path / "home", nats=nats_server)
