"""The COL's configuration, typed: ``[col]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the model
declares none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from overseer_runtime.config import Section


class ColSettings(Section):
    """``[col]``, read with ``settings.typed("col", ColSettings)``; a key it does not know is refused."""

    # Off, execution events are recorded but not acted on; CRUD works either way.
    col_enabled: bool
