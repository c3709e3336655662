"""The ports the stack and its tests choose for their listeners."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from overseer_runtime import launcher
from overseer_runtime.launcher import EPHEMERAL_RANGE, free_port


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.skipif(not EPHEMERAL_RANGE.exists(), reason="no ephemeral port range to read here (not Linux)")
def test_a_free_port_lies_below_the_ephemeral_range_where_no_outgoing_connection_can_take_it() -> None:
    low = int(EPHEMERAL_RANGE.read_text().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(1024 <= port < low for port in ports)
    assert all(bindable(port) for port in ports)


def test_without_the_range_a_free_port_is_the_kernels_choice(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(launcher, "EPHEMERAL_RANGE", tmp_path / "no-such-file")
    port = free_port()
    assert bindable(port)
