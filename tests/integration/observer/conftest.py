"""The observer's integration tests share seed 002's worked example with the unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

# One definition of seed 002's events: the unit tests' helper modules.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "observer"))
