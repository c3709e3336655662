"""Fixtures of the COL unit tests: a registry over the in-memory fake (``tests/fakes/col.py``)."""

from __future__ import annotations

import itertools

import pytest

from overseer_col.application.handlers import ColUnit
from overseer_col.application.registry import CORegistry
from tests.fakes.col import InMemoryCol, make_unit


@pytest.fixture
def col() -> InMemoryCol:
    return InMemoryCol()


@pytest.fixture
def registry(col: InMemoryCol) -> CORegistry:
    ids = (f"co-{n}" for n in itertools.count(1))
    return CORegistry(col, col.emit, clock=col.clock, new_id=lambda: next(ids))


@pytest.fixture
def unit(col: InMemoryCol, registry: CORegistry) -> ColUnit:
    return make_unit(col, registry)


@pytest.fixture
def disabled_unit(col: InMemoryCol, registry: CORegistry) -> ColUnit:
    return make_unit(col, registry, col_enabled=False)
