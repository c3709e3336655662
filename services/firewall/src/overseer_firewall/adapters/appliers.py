"""A read model's appliers keyed by event class: each receives its event's data already typed.

:class:`~overseer_runtime.projection.SqlProjection` dispatches on the event's type name; the
catalogue decodes each type name to exactly one class, so the applier declared for that class
receives data of that class, and none has to unpack it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from overseer_events.envelope import Envelope, EventData
from overseer_runtime.projection import Apply

D = TypeVar("D", bound=EventData)


class Appliers:
    def __init__(self) -> None:
        self._by_type: dict[str, Apply] = {}

    def on(self, kind: type[D], apply: Callable[[sqlite3.Connection, D, Envelope], None]) -> Appliers:
        """Apply every event whose data is a ``kind`` with ``apply(conn, data, envelope)``."""
        if kind.TYPE in self._by_type:
            raise ValueError(f"{kind.__name__} already has an applier")
        typed: Callable[[sqlite3.Connection, Any, Envelope], None] = apply
        self._by_type[kind.TYPE] = lambda conn, event: typed(conn, event.data, event)
        return self

    def by_type(self) -> Mapping[str, Apply]:
        return dict(self._by_type)
