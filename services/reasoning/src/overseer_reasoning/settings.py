"""The agent's configuration, typed: ``[reasoning]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the model
declares none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from pydantic import Field

from overseer_runtime.config import Section


class ReasoningSettings(Section):
    """``[reasoning]``, read with ``settings.typed("reasoning", ReasoningSettings)``."""

    # Planner decisions per turn before the agent asks the person whether to go on.
    max_steps: int = Field(ge=1)
    # How long the executor's tool list is kept, in seconds.
    tools_cache_seconds: float = Field(ge=0)
