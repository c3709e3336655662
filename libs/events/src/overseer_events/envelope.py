"""The event envelope, the type registry, and decoding with upcasting.

Every event travels as one JSON object::

    {"event_id": "<uuid7>", "type": "execution.proposed", "schema_version": 1,
     "aggregate_id": "...", "aggregate_version": 1, "occurred_at": 1763780000.123,
     "actor": "gateway:agent", "correlation_id": "<session>", "causation_id": "<event id>",
     "data": {...}}

``data`` is an :class:`EventData` subclass registered under ``type``. Decoding
tolerates unknown fields, reports unknown types with :class:`UnknownEventType`
and upgrades old ``schema_version`` payloads through registered upcasters.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union

import orjson
from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter, ValidationError, create_model

from overseer_events.errors import EventDecodeError, UnknownEventType
from overseer_events.ids import uuid7


class EventData(BaseModel):
    """The payload of one event type. Immutable; unknown fields are ignored on read."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    TYPE: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1


class Envelope(BaseModel):
    """An immutable event: the envelope fields plus its typed ``data``."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str
    type: str
    schema_version: int = 1
    aggregate_id: str
    aggregate_version: int
    occurred_at: float
    actor: str
    correlation_id: str | None = None
    causation_id: str | None = None
    data: SerializeAsAny[EventData]

    def encode(self) -> bytes:
        """Canonical JSON bytes of the whole event."""
        return orjson.dumps(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "type": self.type,
            "schema_version": self.schema_version,
            "aggregate_id": self.aggregate_id,
            "aggregate_version": self.aggregate_version,
            "occurred_at": self.occurred_at,
            "actor": self.actor,
            "correlation_id": self.correlation_id,
            "causation_id": self.causation_id,
            "data": self.data.model_dump(mode="json"),
        }


D = TypeVar("D", bound=type[EventData])
Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_REGISTRY: dict[str, type[EventData]] = {}
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def event(type_name: str, schema_version: int = 1) -> Callable[[D], D]:
    """Class decorator: register an :class:`EventData` subclass under ``type_name``."""

    def register(cls: D) -> D:
        if type_name in _REGISTRY and _REGISTRY[type_name] is not cls:
            raise ValueError(f"event type {type_name!r} registered twice")
        cls.TYPE = type_name
        cls.SCHEMA_VERSION = schema_version
        _REGISTRY[type_name] = cls
        global _fast
        _fast = None  # the fast validator is built again, with this type, when next needed
        return cls

    return register


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function turning ``data`` of ``from_version`` into ``from_version + 1``."""

    def register(fn: Upcaster) -> Upcaster:
        _UPCASTERS[(type_name, from_version)] = fn
        return fn

    return register


def registered_types() -> dict[str, type[EventData]]:
    return dict(_REGISTRY)


def data_class(type_name: str) -> type[EventData]:
    try:
        return _REGISTRY[type_name]
    except KeyError:
        raise UnknownEventType(type_name) from None


def new_event(
    data: EventData,
    *,
    aggregate_id: str,
    aggregate_version: int,
    actor: str,
    correlation_id: str | None = None,
    causation_id: str | None = None,
    event_id: str | None = None,
    occurred_at: float | None = None,
) -> Envelope:
    """Wrap ``data`` in a fresh envelope (a new UUIDv7, now as ``occurred_at``)."""
    if not data.TYPE:
        raise ValueError(f"{type(data).__name__} is not a registered event")
    return Envelope(
        event_id=event_id or uuid7(),
        type=data.TYPE,
        schema_version=data.SCHEMA_VERSION,
        aggregate_id=aggregate_id,
        aggregate_version=aggregate_version,
        occurred_at=time.time() if occurred_at is None else occurred_at,
        actor=actor,
        correlation_id=correlation_id,
        causation_id=causation_id,
        data=data,
    )


def upcast(type_name: str, version: int, data: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Apply registered upcasters until ``data`` is at the type's current version."""
    current = data_class(type_name).SCHEMA_VERSION
    while version < current:
        step = _UPCASTERS.get((type_name, version))
        if step is None:
            raise EventDecodeError(f"{type_name}: no upcaster from schema version {version}")
        data = step(data)
        version += 1
    return version, data


def decode_dict(raw: dict[str, Any]) -> Envelope:
    """Validate a decoded JSON object as an event; see :func:`decode`."""
    if not isinstance(raw, dict):
        raise EventDecodeError("an event must be a JSON object")
    type_name = raw.get("type")
    if not isinstance(type_name, str):
        raise EventDecodeError("the envelope has no 'type'")
    cls = data_class(type_name)
    data = raw.get("data")
    if not isinstance(data, dict):
        raise EventDecodeError(f"{type_name}: 'data' must be an object")
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or version < 1:
        raise EventDecodeError(f"{type_name}: invalid schema_version {version!r}")
    if version > cls.SCHEMA_VERSION:
        raise EventDecodeError(f"{type_name}: schema_version {version} is newer than this code knows")
    version, data = upcast(type_name, version, data)
    try:
        payload = cls.model_validate(data)
        return Envelope.model_validate({**raw, "schema_version": version, "data": payload})
    except ValidationError as exc:
        raise EventDecodeError(f"{type_name}: {_first_errors(exc)}") from exc


def decode(raw: bytes | str) -> Envelope:
    """Decode JSON bytes into an :class:`Envelope`.

    Raises :class:`UnknownEventType` for a type the catalogue lacks and
    :class:`EventDecodeError` for anything else that is not a valid event.

    The fast path validates the whole event in one pass of pydantic's compiled
    validator (a union discriminated by ``type``, each variant taking only its type's
    current schema version); anything it rejects — an old or newer schema version, an
    unknown type, invalid data — takes the careful path, which upcasts or explains what
    is wrong.
    """
    try:
        return (_fast or _fast_validator())(raw)
    except ValidationError:
        pass
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EventDecodeError(f"not JSON: {exc}") from exc
    return decode_dict(obj)


# The compiled validator's own ``validate_json`` (every event decoded goes through it: the adapter's
# wrapper around it costs a tenth of a replay); None until first needed and whenever a type is added.
_fast: Callable[[bytes | str], Envelope] | None = None


def _fast_validator() -> Callable[[bytes | str], Envelope]:
    """One envelope subclass per registered type, ``type`` as the discriminator, its current schema version
    the only one it takes (an event that names none is version 1)."""
    global _fast
    if _fast is None:
        variants = tuple(
            create_model(
                f"{cls.__name__}Envelope",
                __base__=Envelope,
                type=(Literal[type_name], ...),  # type: ignore[arg-type]
                schema_version=(
                    Literal[cls.SCHEMA_VERSION],  # type: ignore[arg-type]
                    1 if cls.SCHEMA_VERSION == 1 else ...,
                ),
                data=(cls, ...),
            )
            for type_name, cls in _REGISTRY.items()
        )
        union = Annotated[Union[variants], Field(discriminator="type")]  # type: ignore[valid-type]  # noqa: UP007
        _fast = TypeAdapter[Envelope](union).validator.validate_json
    return _fast


def _first_errors(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "event"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
