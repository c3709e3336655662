"""Consequence views as prompt text: what a model is told really happened.

The observer builds the views; the agent answers from them (it reads only
consequence views, never contract internals).
"""

from __future__ import annotations

from collections.abc import Iterable

from overseer_events.views import ExecutionConsequenceView

UNSUCCESSFUL_LABELS = ("FAILED", "REJECTED", "CANCELLED")


def render_consequence(view: ExecutionConsequenceView) -> str | None:
    """One line for a finished tool call; None for anything still going or not a tool call."""
    if view.action_type != "tool_call":
        return None
    label = view.consequence_label
    if label == "SUCCESS":
        side_effect_warning = " ⚠ IRREVERSIBLE" if view.has_side_effects else ""
        suspended_note = " (human-confirmed)" if view.was_suspended else ""
        return f"[{label}{side_effect_warning}{suspended_note}] {view.action_summary}: {view.result}"
    if label in UNSUCCESSFUL_LABELS:
        return f"[{label}] {view.action_summary}: {view.error_message}"
    return None


def build_tool_result_from_consequences(views: Iterable[ExecutionConsequenceView]) -> str:
    """Every finished tool call, one line each, in the order given."""
    return "\n".join(line for view in views if (line := render_consequence(view)) is not None)
