from __future__ import annotations

import pytest
from observer_folding import FoldedExample
from observer_seed002 import STEPS


@pytest.fixture
def example() -> FoldedExample:
    return FoldedExample(STEPS)
