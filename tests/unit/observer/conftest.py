from __future__ import annotations

import pytest

from tests.unit.observer.observer_folding import FoldedExample
from tests.unit.observer.observer_seed002 import STEPS


@pytest.fixture
def example() -> FoldedExample:
    return FoldedExample(STEPS)
