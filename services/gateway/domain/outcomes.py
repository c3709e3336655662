"""When an execution has something to tell the agent that waits for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def is_settled(view: Mapping[str, Any], until_terminal: bool = False) -> bool:
    """Terminal, or WAITING for a person (unless the caller waits for the terminal state only)."""
    if not view.get("is_still_pending", True):
        return True
    return not until_terminal and view.get("consequence_label") == "WAITING"
