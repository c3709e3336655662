"""Who owns which event types, how subjects are named, and the JetStream streams.

Subjects are ``overseer.<owner>.<event type>``: the owner prefix makes
single-writer enforceable by NATS permissions (a service may publish only
under its own prefix) and lets two owners share a type (``execution.proposed``
comes from reasoning for its own agent and from the gateway for external ones).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal, TypeGuard

SERVICES: tuple[str, ...] = ("gateway", "reasoning", "firewall", "executor", "col", "observer")

PREFIX = "overseer"

# Who may publish what: the event type patterns each service alone may publish.
OWNERSHIP: dict[str, tuple[str, ...]] = {
    "gateway": (
        "conversation.message_received",
        "conversation.answer_received",
        "human.responded",
        "co.command.*",
        "execution.proposed",
        "execution.outcome_reported",
        "notice.*",
    ),
    "reasoning": ("execution.proposed", "conversation.replied", "agent.*", "memory.*", "co.suggested"),
    "firewall": (
        "firewall.*",
        "human.decision_recorded",
        "policy.*",
        "audit.*",
    ),
    "executor": (
        "execution.transitioned",
        "execution.contract_created",
        "execution.co_moved",
        "execution.contract_drafted",
        "execution.moves_held",
        "ecs.requested",
        "ecs.closed",
        "tools.announced",
    ),
    "col": (
        "co.created",
        "co.updated",
        "co.transitioned",
        "co.execution_linked",
        "co.memory_linked",
        "co.execution_reported",
        "co.suggestion_recorded",
        "co.suggestion_decided",
        "co.command_rejected",
    ),
    "observer": ("observation.*",),
}


# Event types kept in their owner's store and never published: the executor's draft of a contract
# (``execution.contract_drafted``), a proposal it holds until the verdict moves it, announced then as
# ``execution.contract_created`` with its first moves; the moves it holds back while a call runs
# (``execution.moves_held``: its start, announced with its end); and, in a firewall store from an older version,
# the audit chain's entries (``audit.recorded``: the chain is now rows of the firewall's ``fw_audit``,
# anchored outside it by the heads its verdicts and its ``audit.head_published`` carry).
KEPT_IN_STORE: frozenset[str] = frozenset(
    {"audit.recorded", "execution.contract_drafted", "execution.moves_held"}
)

# Event types that are sent and never stored: published on core NATS after the commit that derives
# them (:meth:`Subjects.ephemeral`), outside the events stream, so they have no sequence number and
# a client that is away misses them. The observer's ``execution_state`` is one per transition and
# says again what the transition (which is stored) already says, in the words a live view shows;
# storing it too would double what every action costs the stream.
EPHEMERAL: frozenset[str] = frozenset({"observation.execution_state"})

# The header a publisher sets on an event someone waits on to go on (Overseer's own agent resumes its
# turn on the end of its tool call, carried by the executor's transition and then by the observer's
# fact). A consumer that lets events gather off the critical path never holds such an event back:
# see ``overseer_runtime.provisioning.Subscription.gather``.
AWAITED_HEADER = "Overseer-Awaited"


class NotOwner(Exception):
    def __init__(self, service: str, event_type: str) -> None:
        super().__init__(f"{service} does not own event type {event_type!r}")


@cache
def owns(service: str, event_type: str) -> bool:
    """Whether ``service`` may publish ``event_type`` (cached: it is asked for every event, twice)."""
    return any(fnmatch.fnmatchcase(event_type, pattern) for pattern in OWNERSHIP.get(service, ()))


def owners_of(event_type: str) -> list[str]:
    return [service for service in SERVICES if owns(service, event_type)]


DEFAULT_NAMESPACE = PREFIX


def tokens_match(pattern: Sequence[str], tokens: Sequence[str]) -> bool:
    """NATS wildcard matching over ``.``-tokens: ``*`` is one token, a final ``>`` one or more."""
    for i, part in enumerate(pattern):
        if part == ">":
            return i == len(pattern) - 1 and len(tokens) > i
        if i >= len(tokens):
            return False
        if part != "*" and part != tokens[i]:
            return False
    return len(pattern) == len(tokens)


@cache
def subject_matches(subject: str, patterns: tuple[str, ...]) -> bool:
    """Whether a subject matches any of the NATS subject patterns (cached: asked for every message)."""
    tokens = subject.split(".")
    return any(tokens_match(pattern.split("."), tokens) for pattern in patterns)


@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]


@dataclass(frozen=True)
class Subjects:
    """Subject and stream names of one stack.

    The namespace is the first subject token (``overseer`` by default); tests
    give each stack its own, so stacks sharing a nats-server never see each
    other's events. Permissions match any namespace (``*.<service>.>``).
    """

    namespace: str = DEFAULT_NAMESPACE

    def event(self, service: str, event_type: str) -> str:
        """The subject ``service`` publishes ``event_type`` on; refuses a type it does not own."""
        if not owns(service, event_type):
            raise NotOwner(service, event_type)
        return f"{self.namespace}.{service}.{event_type}"

    def events_of(self, owner: str, pattern: str = ">") -> str:
        return f"{self.namespace}.{owner}.{pattern}"

    def rpc(self, service: str, method: str) -> str:
        return f"{self.namespace}.rpc.{service}.{method}"

    def dlq(self, service: str) -> str:
        return f"{self.namespace}.dlq.{service}"

    def reply_delta(self, session_id: str) -> str:
        """Where the agent's reply is streamed as it is written, for ``session_id``: core NATS, outside
        the events stream (pieces of text, never stored; the finished reply is an event). The session
        travels in the message too: a dot or a wildcard in it is made harmless here."""
        token = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id) or "_"
        return f"delta.{self.namespace}.reasoning.{token}"

    @property
    def reply_deltas(self) -> str:
        """Every reply delta of the stack (the gateway's one subscription)."""
        return f"delta.{self.namespace}.reasoning.>"

    @property
    def settled_views(self) -> str:
        """Where the executor tells, on core NATS, how an external agent's call stands the moment it
        settles (WAITING for a person, or ended): its consequence view, for the gateway, which answers an
        agent that proposed and waits in one request without asking (never stored: the contract's own
        events on the stream say the same)."""
        return f"settled.{self.namespace}.executor"

    def ephemeral(self, service: str, event_type: str) -> str:
        """Where ``service`` sends an :data:`EPHEMERAL` event: core NATS, never stored (the owner's
        subject, which refuses a type the service does not own, under ``ephemeral.``)."""
        return f"ephemeral.{self.event(service, event_type)}"

    @property
    def ephemerals(self) -> str:
        """Every ephemeral event of the stack (the gateway's one subscription)."""
        return f"ephemeral.{self.namespace}.>"

    @property
    def ephemeral_listeners(self) -> str:
        """Where the gateway says, on core NATS and with no body, that a live client follows ephemeral
        events (again every few seconds while one does): a service builds and sends them only then."""
        return f"listening.{self.namespace}.ephemeral"

    def awaited(self, service: str) -> str:
        """Where ``service`` says, on core NATS and with no body, that the stream has just stored an
        event of its marked awaited (:data:`AWAITED_HEADER`): a consumer that lets what follows a gather
        wait on the server fetches it now (see ``overseer_runtime.consumer``)."""
        return f"awaited.{self.namespace}.{service}"

    @property
    def live(self) -> str:
        """Where the events stream announces each event it stored (the event; its subject, sequence and
        the sequence of the one before it on that subject in headers)."""
        return f"live.{self.namespace}.>"

    @property
    def dlq_stream(self) -> str:
        return f"{self.namespace.upper()}_DLQ"

    @property
    def events_stream(self) -> str:
        return f"{self.namespace.upper()}_EVENTS"

    def stream_specs(self) -> list[StreamSpec]:
        """The events stream (every owner's subjects) and the dead-letter stream.

        One stream gives every consumer, operator and WebSocket client one total
        order with one sequence number to resume from, and a consumer that reads
        several owners gets their events in the order they were published (a
        verdict never overtakes the proposal it judges). Single-writer is a matter
        of subjects and permissions, not of streams.
        """
        return [
            StreamSpec(self.events_stream, tuple(f"{self.namespace}.{s}.>" for s in SERVICES)),
            StreamSpec(self.dlq_stream, (f"{self.namespace}.dlq.>",)),
        ]


DEFAULT_SUBJECTS = Subjects()


def subject_for(service: str, event_type: str) -> str:
    return DEFAULT_SUBJECTS.event(service, event_type)


def owner_of_subject(subject: str) -> str | None:
    parts = subject.split(".", 2)
    if len(parts) == 3 and parts[1] in SERVICES:
        return parts[1]
    return None


def type_of_subject(subject: str) -> str | None:
    parts = subject.split(".", 2)
    return parts[2] if len(parts) == 3 and parts[1] in SERVICES else None


# Who may call which RPC methods. Only the gateway — the front door, which checks
# roles — may call everything; an LLM-driven service can read, never decide.
RPC_CALLS: dict[str, tuple[str, ...]] = {
    "gateway": ("*.rpc.>",),
    "reasoning": (
        "*.rpc.observer.>",
        "*.rpc.firewall.prompt.>",
        # The tool registry, for the tool selector (registration stays apart from invocation).
        "*.rpc.executor.tools.list",
        "*.rpc.col.get",
        "*.rpc.col.search",
        "*.rpc.col.list",
        "*.rpc.col.list_active",
        "*.rpc.col.list_by_status",
    ),
}
READ_ONLY_RPC = ("*.rpc.*.health", "*.rpc.observer.>")

# The methods of a service running as several partitions (replicas, each with its own store) that
# are not answered by any one replica: every replica answers from its own store and the caller keeps
# the one answer that is not 404 ("found": the execution or session lives in one partition), every
# list together ("merged") or every replica's result ("all"); or partition 0 alone answers ("first":
# what it keeps for every replica, such as the firewall's policy). Any one replica answers the other
# methods; every replica answers ``health`` (the caller combines them) and ``metrics`` ("each").
PARTITIONED_RPC: dict[str, dict[str, Literal["found", "merged", "all", "first"]]] = {
    "executor": {
        "approvals.pending": "merged",
        "approvals.get": "found",
        "contract.get": "found",
        "consequence": "found",
        "decisions.refused": "merged",
        "execution.cancel": "found",
    },
    "firewall": {
        "policy.get": "first",
        "policy.replace_admin": "first",
        "policy.set_mode": "first",
        "catalogue.accept": "first",
        "agents.list": "first",
        "prompt.system": "first",
        "perception.stats": "first",
        "policy.told": "all",
        "policy.replay": "all",
        "approvals.escalated": "all",
        "audit.verify": "all",
        "audit.list": "found",
        "session.pause": "found",
        "session.resume": "found",
        "session.cancel": "found",
    },
}


Gathering = Literal["found", "merged", "all", "first", "health", "each"]
# The runtime's own methods, which every service answers.
_EVERY_SERVICE: dict[str, Gathering] = {"health": "health", "metrics": "each"}


def gathering(service: str, method: str) -> Gathering | None:
    """How the replies of a partitioned ``service``'s replicas to ``method`` are combined (None: one answers)."""
    return _EVERY_SERVICE.get(method) or PARTITIONED_RPC.get(service, {}).get(method)


def asked_of_every_replica(mode: Gathering | None) -> TypeGuard[Gathering]:
    """Whether a method gathered so is asked of every replica (not of any one, nor of partition 0 alone)."""
    return mode not in (None, "first")


def rpc_permissions(user: str) -> list[str]:
    return [*RPC_CALLS.get(user, ()), *READ_ONLY_RPC]
