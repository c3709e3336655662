"""Typed errors of the event backbone."""

from __future__ import annotations


class EventError(Exception):
    """Base class of every backbone error."""


class UnknownEventType(EventError):
    """A message names an event type the catalogue does not know."""

    def __init__(self, event_type: str) -> None:
        super().__init__(f"unknown event type {event_type!r}")
        self.event_type = event_type


class EventDecodeError(EventError):
    """A message is not a valid event: bad JSON, a missing envelope field or invalid data."""


class ConcurrencyError(EventError):
    """Another writer appended the same aggregate version first (optimistic concurrency)."""


class TransientError(EventError):
    """A handler failed for a reason that may pass: the message is redelivered later."""


class InvalidTransition(EventError):
    """A state machine was asked for a trigger that is not legal in its current state."""

    def __init__(self, machine: str, state: str, trigger: str, legal: list[str]) -> None:
        legal_text = ", ".join(legal) if legal else "none: the state is terminal"
        super().__init__(f"{machine}: trigger {trigger!r} is not legal from {state!r} (legal: {legal_text})")
        self.machine = machine
        self.state = state
        self.trigger = trigger
        self.legal_triggers = legal
