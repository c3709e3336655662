"""Fixtures of the firewall kernel's unit tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from overseer_firewall.domain.engine import FirewallEngine
from tests.unit.firewall.fw_kernel import engine_for


@pytest.fixture
def engine() -> FirewallEngine:
    return engine_for()


@pytest.fixture
def make_engine() -> Callable[..., FirewallEngine]:
    return engine_for
