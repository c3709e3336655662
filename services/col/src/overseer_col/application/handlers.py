"""Handlers of the events the COL consumes: load → decide → emit (the runtime commits).

* ``co.command.*`` (gateway): user commands. Each one ends with an outcome in
  the command log, under its ``command_id``: success, or a refusal that is
  also published as ``co.command_rejected``. A repeated command_id keeps its
  first outcome and changes nothing. ``command.await`` answers from that log.
* ``co.suggested`` (reasoning): only recorded as a pending suggestion.
* ``execution.co_moved`` (executor): a contract that names a CO moved; it is
  linked to the CO and its terminal outcome reported, the CO's status
  untouched; ignored when ``col_enabled`` is off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from overseer_col.application.ports import CommandLog, CommandOutcome
from overseer_col.application.registry import CORegistry
from overseer_col.domain.errors import CoInvalid, CoRefused
from overseer_events.catalogue import (
    CoCreateCommand,
    CoDecideSuggestionCommand,
    CoExecutionMoved,
    CoLinkCommand,
    CoSuggested,
    CoTransitionCommand,
    CoUpdateCommand,
    MemoryStored,
)
from overseer_events.envelope import EventData

log = logging.getLogger("overseer.col")


@dataclass(frozen=True, slots=True)
class ColUnit:
    """What a handler works with inside one unit of work (built by ``bootstrap.ColService.unit_for``)."""

    registry: CORegistry
    commands: CommandLog
    settled: Callable[[str], None]  # after commit, wakes whoever awaits this command_id
    col_enabled: bool
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class Applied:
    status: int
    co_id: str | None = None
    suggestion_id: str | None = None


def run_command(
    unit: ColUnit, command: EventData, command_id: str, co_id: str | None, action: Callable[[], Applied]
) -> None:
    """Apply a command once: record its outcome (or refusal) by command_id, then wake its waiter."""
    if unit.commands.outcome(command_id) is None:
        try:
            applied = action()
            outcome = CommandOutcome(command_id, applied.status, applied.co_id, applied.suggestion_id)
        except CoRefused as refusal:
            unit.registry.reject(command_id, co_id, refusal)
            outcome = CommandOutcome(
                command_id,
                refusal.status,
                co_id,
                detail=refusal.detail,
                legal_triggers=refusal.legal_triggers,
            )
        unit.commands.record(outcome, command_type=command.TYPE, processed_at=unit.clock())
    unit.settled(command_id)


# -- user commands (gateway) ----------------------------------------------------------------
def create_co(cmd: CoCreateCommand, unit: ColUnit) -> None:
    def action() -> Applied:
        co = unit.registry.create(
            cmd.title,
            cmd.created_by,
            co_id=cmd.co_id,
            conversation_id=cmd.conversation_id,
            command_id=cmd.command_id,
            description=cmd.description,
            semantic_type=cmd.semantic_type,
            domain_tag=cmd.domain_tag,
            intent_category=cmd.intent_category,
            external_references=cmd.external_references,
            related_co_ids=cmd.related_co_ids,
        )
        return Applied(201, co.co_id)

    run_command(unit, cmd, cmd.command_id, cmd.co_id, action)


def update_co(cmd: CoUpdateCommand, unit: ColUnit) -> None:
    def action() -> Applied:
        unit.registry.update_metadata(cmd.co_id, cmd.changes, command_id=cmd.command_id)
        return Applied(200, cmd.co_id)

    run_command(unit, cmd, cmd.command_id, cmd.co_id, action)


def transition_co(cmd: CoTransitionCommand, unit: ColUnit) -> None:
    def action() -> Applied:
        unit.registry.transition(cmd.co_id, cmd.trigger, cmd.actor, cmd.reason, command_id=cmd.command_id)
        return Applied(200, cmd.co_id)

    run_command(unit, cmd, cmd.command_id, cmd.co_id, action)


def link_co(cmd: CoLinkCommand, unit: ColUnit) -> None:
    def action() -> Applied:
        if cmd.execution_id is not None and cmd.memory_id is None:
            unit.registry.link_execution(cmd.co_id, cmd.execution_id, command_id=cmd.command_id)
        elif cmd.memory_id is not None and cmd.execution_id is None:
            unit.registry.link_memory(cmd.co_id, cmd.memory_id, command_id=cmd.command_id)
        else:
            unit.registry.require(cmd.co_id)
            raise CoInvalid("give exactly one of execution_id or memory_id")
        return Applied(200, cmd.co_id)

    run_command(unit, cmd, cmd.command_id, cmd.co_id, action)


def decide_suggestion(cmd: CoDecideSuggestionCommand, unit: ColUnit) -> None:
    def action() -> Applied:
        suggestion, co_id = unit.registry.decide_suggestion(
            cmd.suggestion_id, cmd.decision, command_id=cmd.command_id
        )
        return Applied(200, co_id, suggestion.suggestion_id)

    run_command(unit, cmd, cmd.command_id, None, action)


# -- what the reasoning service suggests ----------------------------------------------------
def record_suggestion(suggested: CoSuggested, unit: ColUnit, session_id: str | None) -> None:
    try:
        unit.registry.record_suggestion(suggested, session_id=session_id)
    except CoRefused as refusal:
        # A malformed suggestion is the LLM's mistake: nothing to record, nobody waiting for an answer.
        log.warning("co.suggested %s ignored: %s", suggested.suggestion_id, refusal.detail)


# -- execution facts, when col_enabled is on -----------------------------
def link_memory(memory: MemoryStored, unit: ColUnit) -> None:
    """A memory the agent kept about a CO is linked to it (``linked_memory_ids``); gated like executions."""
    if not unit.col_enabled or memory.co_id is None:
        return
    if unit.registry.get(memory.co_id) is None:
        log.warning("memory %s names unknown Cognitive Object %s", memory.memory_id, memory.co_id)
        return
    try:
        unit.registry.link_memory(memory.co_id, memory.memory_id)
    except CoRefused as refusal:
        log.warning("memory %s not linked to %s: %s", memory.memory_id, memory.co_id, refusal.detail)


def report_execution_fact(moved: CoExecutionMoved, unit: ColUnit) -> None:
    if not unit.col_enabled:
        return
    if unit.registry.get(moved.co_id) is None:
        log.warning("execution %s names unknown Cognitive Object %s", moved.execution_id, moved.co_id)
        return
    unit.registry.report_execution(moved.co_id, moved.execution_id, moved.status)
