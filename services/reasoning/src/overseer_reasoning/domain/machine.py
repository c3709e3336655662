"""The agent's turn as a state machine: its nodes, and which node may follow which.

A turn of the agent (one message of the person, answered) walks a graph of nodes, the
cognitive graph. Each node is one job: normalise the input, infer the emotional
context, recall memories, plan, select a tool, take a tool's result back, ask the person (and
take the answer back), consolidate what to remember. The graph is data: :data:`TRANSITIONS`
maps each node to the nodes allowed to follow it, and :func:`check_move` refuses any other move,
so no node function can take a path the table does not draw.

The observer (the cognitive trace) is not a node of this table: it is a side channel that runs
after every step and never chooses what comes next (see ``graph.observe``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Literal


class Node(StrEnum):
    """A node of the turn's graph: where the turn is, i.e. the node that runs next."""

    NORMALISE = "normalise"  # the person's text and file references -> the semantic input
    EMOTION = "emotion"  # the emotional context (a modulator: it never chooses a branch)
    RECALL = "recall"  # long-term memories -> working memory
    PLANNER = "planner"  # one decision: reply, call a tool, or ask the person
    SELECT_TOOL = "select_tool"  # the planned tool, checked against the tools available
    TOOL_RESULT = "tool_result"  # waiting for the tool call's outcome; takes it back
    HITL = "hitl"  # suspend the turn with a question to the person
    RESUME = "resume"  # waiting for the person's answer; takes it back
    CONSOLIDATE = "consolidate"  # what to remember of the turn; the turn ends
    DONE = "done"  # no turn running: the next message starts one


Status = Literal["thinking", "waiting_for_tool", "waiting_for_human", "done"]
"""What a turn is doing, as a person sees it: working, waiting for a tool call's outcome,
waiting for the person's answer, or finished."""


TRANSITIONS: Mapping[Node, frozenset[Node]] = {
    Node.DONE: frozenset({Node.NORMALISE}),
    Node.NORMALISE: frozenset({Node.EMOTION}),
    Node.EMOTION: frozenset({Node.RECALL}),
    Node.RECALL: frozenset({Node.PLANNER}),
    # The planner's three branches: a tool call, a question to the person, a reply.
    Node.PLANNER: frozenset({Node.SELECT_TOOL, Node.HITL, Node.CONSOLIDATE}),
    # A tool that is not available goes straight back to the planner (re-evaluate).
    Node.SELECT_TOOL: frozenset({Node.TOOL_RESULT, Node.PLANNER}),
    # Every outcome goes back to the planner: a completed call is answered from,
    # a failed or rejected one is re-evaluated.
    Node.TOOL_RESULT: frozenset({Node.PLANNER}),
    Node.HITL: frozenset({Node.RESUME}),
    # The answer goes back to the planner; "stop" at the step limit ends the turn.
    Node.RESUME: frozenset({Node.PLANNER, Node.CONSOLIDATE}),
    Node.CONSOLIDATE: frozenset({Node.DONE}),
}
"""The graph: each node and the nodes allowed to follow it."""

STATUS_AT: Mapping[Node, Status] = {
    Node.TOOL_RESULT: "waiting_for_tool",
    Node.RESUME: "waiting_for_human",
    Node.DONE: "done",
}
"""The status of a turn that stands at a node; at any node not named here the agent is thinking."""


class IllegalTransition(ValueError):
    """A move the graph does not allow, or a node run while the turn stands elsewhere."""


def status_at(node: Node) -> Status:
    """The status of a turn standing at ``node``."""
    return STATUS_AT.get(node, "thinking")


def check_move(source: Node, target: Node) -> Node:
    """``target`` when the table allows ``source -> target``; otherwise :class:`IllegalTransition`."""
    if target not in TRANSITIONS[source]:
        allowed = ", ".join(sorted(TRANSITIONS[source])) or "nothing"
        raise IllegalTransition(
            f"{source} -> {target} is not a move of the graph ({source} allows {allowed})"
        )
    return target
