"""The COL's configuration, typed: ``[col]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the model
declares none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ColSettings(BaseModel):
    """``[col]``; a key this model does not know is refused, so a misspelt key is not silently ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Seed 000 §9.1: off, execution events are recorded but not acted on; CRUD works either way.
    col_enabled: bool
