"""The catalogue: every event type of Overseer, grouped by the service that owns it.

Each class is the ``data`` of one event type. Fields added later must have
defaults, so old events still decode; a breaking change bumps the schema
version and registers an upcaster (see ``conversation.message_received``).
Ownership (who may publish what) lives in :mod:`overseer_events.subjects`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Field, StringConstraints, field_validator

from overseer_events.canonical import MAX_DEPTH, nested_deeper_than
from overseer_events.envelope import EventData, event, upcaster
from overseer_events.machines.execution import is_terminal
from overseer_events.views import ExecutionConsequenceView

JSON = dict[str, Any]

ActionType = Literal["tool_call", "ecs_request"]
RunsAt = Literal["executor", "agent"]
PermissionLevel = Literal["AUTO", "NOTIFY", "CONFIRM", "APPROVE"]
VerdictDecision = Literal["allow", "hold", "deny"]
ApprovalKind = Literal["approval", "reconciliation", "confirmation"]
NoticeKind = Literal["held", "escalated"]  # a call waits for a person; nobody answered in time


class Principal(EventData):
    """Who stands behind a request: a role and an id (``agent:agent``, ``operator:alice``)."""

    kind: str
    id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"


OWN_AGENT = Principal(kind="agent", id="reasoning")
"""Overseer's own agent (the reasoning service), the proposer of its tool calls: the firewall judges
them like any agent's; unlike an external agent, which asks the executor, it waits on their events."""


# ---------------------------------------------------------------- gateway --
@event("conversation.message_received", schema_version=2)
class MessageReceived(EventData):
    """A person's message to the agent; its event id is the message id and the id of the turn it starts."""

    session_id: str
    text: str
    channel: str = "rest"
    principal: Principal | None = None
    # Files the message refers to: paths inside the tool sandbox (relative to it), checked by the gateway.
    attachments: list[str] = Field(default_factory=list)


@upcaster("conversation.message_received", from_version=1)
def _message_received_v1_to_v2(data: JSON) -> JSON:
    """v1 called the text ``message`` and had no channel."""
    upgraded = {k: v for k, v in data.items() if k != "message"}
    upgraded["text"] = data.get("message", "")
    upgraded.setdefault("channel", "rest")
    return upgraded


class PathGrant(EventData):
    """A person's permission for the agent to use ``tool`` on ``path`` (and below it) in one session."""

    tool: str
    path: str


@event("conversation.answer_received")
class AnswerReceived(EventData):
    """A person's answer to the agent's open question (clarify, choose, confirm, permission) in a session.

    ``grant`` is set when the question asked for a permission and the answer authorises it: the
    firewall then records the grant for the session (``policy.path_granted``).
    """

    session_id: str
    request_id: str
    answer: str
    responder: Principal
    grant: PathGrant | None = None


@event("human.responded")
class HumanResponded(EventData):
    """A person's answer to an approval card: a decision word or free text, bound to args_hash."""

    execution_id: str
    response: str
    args_hash: str | None = None
    comment: str | None = None
    responder: Principal
    session_id: str | None = None
    # Where the answer came from when not the API or the console: an approval link of a channel's
    # notice (``link:<channel>``), and the link's id, so each link decides once.
    via: str | None = None
    link_id: str | None = None


@event("notice.delivery_attempted")
class NoticeDeliveryAttempted(EventData):
    """One attempt to tell an approval channel about a held call (``notice`` ``held``) or an escalated
    one (``escalated``): delivered, or failed with why and whether another attempt follows.

    ``delivery_id`` names the notice to that channel (one per execution, notice and channel); its
    attempts are numbered from 1. ``retry_in`` (seconds) is set when another attempt is planned;
    a failure without it is the last one."""

    delivery_id: str
    execution_id: str
    notice: NoticeKind
    channel: str
    channel_kind: Literal["webhook", "email", "unknown"]
    attempt: int = Field(ge=1)
    outcome: Literal["delivered", "failed"]
    detail: str = ""
    status_code: int | None = None
    retry_in: float | None = None


@event("co.command.create")
class CoCreateCommand(EventData):
    command_id: str
    co_id: str
    title: str
    description: str = ""
    semantic_type: str | None = None
    domain_tag: str | None = None
    intent_category: str | None = None
    external_references: list[dict[str, str]] = Field(default_factory=list)
    related_co_ids: list[dict[str, str]] = Field(default_factory=list)
    conversation_id: str | None = None
    created_by: str = "user"


@event("co.command.update")
class CoUpdateCommand(EventData):
    command_id: str
    co_id: str
    changes: JSON


@event("co.command.transition")
class CoTransitionCommand(EventData):
    command_id: str
    co_id: str
    trigger: str
    reason: str | None = None
    actor: str = "user"


@event("co.command.link")
class CoLinkCommand(EventData):
    command_id: str
    co_id: str
    execution_id: str | None = None
    memory_id: str | None = None


@event("co.command.decide_suggestion")
class CoDecideSuggestionCommand(EventData):
    command_id: str
    suggestion_id: str
    decision: Literal["confirm", "dismiss"]


# What a proposal's ids, tool name and arguments must look like. A proposal that breaks these is
# malformed: refused when built, and dead-lettered by the runtime when it arrives on the bus, so an
# empty execution id or arguments too deep to hash never reach the firewall or the executor.
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:\-]*$"
ID_MAX = 128
ProposalId = Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX, pattern=ID_PATTERN)]
"""An execution, session, CO or dependency id: letters, digits and ``_ . : -``, at most 128."""
ToolName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$"),
]
"""Dotted words: ``fs.list``, ``email.send``, ``my-server.tool_1``."""
Key = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")]
"""An idempotency key: any printable text, at most 256 characters."""


def _shallow(value: JSON) -> JSON:
    if nested_deeper_than(value, MAX_DEPTH):
        raise ValueError(f"arrays and objects nested more than {MAX_DEPTH} levels deep")
    return value


ShallowJSON = Annotated[JSON, AfterValidator(_shallow)]
"""A JSON object nested at most :data:`~overseer_events.canonical.MAX_DEPTH` levels deep (it is hashed)."""


@event("execution.proposed")
class ExecutionProposed(EventData):
    """An agent wants a tool to run (or asks a human): the contract, not yet PENDING."""

    execution_id: ProposalId
    session_id: ProposalId
    action_type: ActionType = "tool_call"
    tool: ToolName | None = None
    args: ShallowJSON = Field(default_factory=dict)
    action_detail: ShallowJSON = Field(default_factory=dict)
    irreversible: bool | None = None
    idempotency_key: Key | None = None
    timeout_seconds: float | None = None
    confidence: float | None = None
    co_id: ProposalId | None = None
    summary: str | None = None
    proposer: Principal
    depends_on: ProposalId | None = None
    # Where the tool runs: the executor's registry, or the agent's own process (the agent runs it once
    # allowed, with the approved arguments, and reports the outcome: ``execution.outcome_reported``).
    runs_at: RunsAt = "executor"
    # The model tokens the proposing agent's session has used so far (Overseer's own agent says; the
    # firewall holds calls of a session past its token budget).
    model_tokens: int | None = Field(default=None, ge=0)

    @field_validator("proposer")
    @classmethod
    def _named_proposer(cls, proposer: Principal) -> Principal:
        if not proposer.kind or not proposer.id:
            raise ValueError("the proposer needs a kind and an id")
        return proposer


@event("execution.outcome_reported")
class OutcomeReported(EventData):
    """The agent that ran an execution in its own process (``runs_at: agent``) says how it ended, with the
    hash of the arguments it ran with (they must be the approved ones). Accepted once, from that agent."""

    execution_id: ProposalId
    status: Literal["completed", "failed"]
    result: str | None = None
    error: str | None = None
    args_hash: str
    reported_by: Principal
    session_id: str | None = None  # the execution's session (None in reports recorded before it was said)


# -------------------------------------------------------------- reasoning --
@event("conversation.replied")
class ConversationReplied(EventData):
    session_id: str
    text: str
    in_reply_to: str | None = None


@event("agent.step_taken")
class AgentStepTaken(EventData):
    """One node step of the agent's graph in a session's turn (aggregate ``agent:<session_id>``).

    ``input`` is what the node took from outside (the message, recalled memories, the planner's
    decision, a tool's outcome, the person's answer…), tagged by ``input.node``; ``record`` is the
    step's trace record. Folding a session's steps in order with the graph's node functions
    rebuilds its state.
    """

    session_id: str
    turn_id: str
    step: int = Field(ge=1)
    input: JSON
    record: JSON


@event("memory.stored")
class MemoryStored(EventData):
    memory_id: str
    session_id: str | None = None
    kind: str
    content: JSON
    execution_id: str | None = None
    co_id: str | None = None


@event("co.suggested")
class CoSuggested(EventData):
    """The LLM may only suggest: a CO to create, or a transition to apply."""

    suggestion_id: str
    kind: Literal["create", "transition"]
    co_id: str | None = None
    trigger: str | None = None
    fields: JSON = Field(default_factory=dict)
    reason: str | None = None
    session_id: str | None = None


class AnnouncedTool(EventData):
    """One tool the executor can run, as it declares it: what it is, its arguments' JSON schema, where it
    comes from (``builtin``, ``mcp:<server>``) and what it says of its effects.

    ``read_only``, ``destructive`` and ``open_world`` are what the tool says of itself (an MCP server's
    ``readOnlyHint``, ``destructiveHint``, ``openWorldHint``), None when it says nothing.
    ``irreversible`` and ``idempotent`` are what the executor acts on, after the configuration's
    overrides: an irreversible tool is never run twice for the same arguments, an idempotent one may be
    run again after a crash.
    """

    name: str
    description: str = ""
    input_schema: JSON = Field(default_factory=lambda: {"type": "object"})
    source: str = "builtin"
    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None
    irreversible: bool = False
    idempotent: bool = False


# --------------------------------------------------------------- firewall --
class LayerFinding(EventData):
    layer: str
    outcome: str
    message: str = ""
    details: JSON = Field(default_factory=dict)


@event("audit.recorded")
class AuditRecorded(EventData):
    """One entry of the firewall's audit chain, as a firewall store from an older version holds it
    (never published; the chain is now rows of the store's ``fw_audit`` table, written with what
    they record). Read still: a rebuild of such a store keeps its entries."""

    index: int
    prev_hash: str
    hash: str
    record: JSON


@event("audit.head_published")
class AuditHeadPublished(EventData):
    """The audit chain's head after a commit that appended records: entry ``index`` has hash ``hash``.

    Published on the events stream (which denies delete and purge), it anchors the chain outside
    the firewall's SQLite file: ``audit verify`` reads every head back from the stream and checks it
    against the local chain. Aggregate ``audit:head``, version = ``index``: one head per index.
    ``hashes`` are the hashes of the entries it covers, oldest first — the entries
    ``index - len(hashes) + 1`` to ``index``, those since the previous head — so a rewritten entry is
    named exactly, though the entries themselves stay in the firewall's store (empty in heads
    published while every entry was also published as ``audit.recorded``). A verdict carries one too
    (``firewall.verdict_issued``'s ``audit_head``, same meaning); the heads published on their own
    cover what no verdict did.
    """

    index: int
    hash: str
    hashes: list[str] = Field(default_factory=list)
    # Which chain: a firewall running as several replicas keeps one chain per replica (partition k's
    # is chain k), each anchored by its own heads.
    chain: int = 0


@event("firewall.verdict_issued")
class VerdictIssued(EventData):
    execution_id: str
    session_id: str
    tool: str | None = None
    level: PermissionLevel
    decision: VerdictDecision
    findings: list[LayerFinding] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list)
    args: JSON = Field(default_factory=dict)
    args_hash: str
    policy_version: int = 0
    preview: JSON | None = None
    requested_by: Principal | None = None
    # The audit chain's head as the verdict was issued, with the hash of every entry since the head
    # before it (as an ``audit.head_published`` says them): each verdict anchors the chain on the
    # stream, so a head is published on its own only when no verdict came for a while. None when
    # nothing new was there to anchor.
    audit_head: AuditHeadPublished | None = None


@event("firewall.notified")
class FirewallNotified(EventData):
    execution_id: str
    session_id: str
    tool: str | None = None
    message: str


@event("human.decision_recorded")
class HumanDecisionRecorded(EventData):
    """HumanGate's parsed, validated decision; the executor acts on this, never on raw responses."""

    execution_id: str
    session_id: str | None = None
    decision: Literal["approve", "reject", "completed", "failed", "timeout"]
    args_hash: str
    decided_by: Principal
    latency_ms: float | None = None
    comment: str | None = None
    response_event_id: str | None = None
    # The tool of an approval (None for a reconciliation or a question): what adaptive escalation
    # counts, read from the decision itself by a firewall replica that did not judge the call.
    tool: str | None = None


@event("firewall.approval_escalated")
class ApprovalEscalated(EventData):
    execution_id: str
    session_id: str | None = None
    to_role: str = "admin"
    after_seconds: float


@event("firewall.session_paused")
class SessionPaused(EventData):
    session_id: str
    by: Principal
    reason: str | None = None


@event("firewall.session_cancel_requested")
class SessionCancelRequested(EventData):
    """Second-stage abort: every PENDING or WAITING contract of the session must be cancelled."""

    session_id: str
    by: Principal
    reason: str | None = None


@event("policy.admin_replaced")
class AdminPolicyReplaced(EventData):
    version: int
    policy: JSON
    replaced_by: Principal


@event("policy.user_level_changed")
class UserLevelChanged(EventData):
    tool: str
    before: PermissionLevel | None
    after: PermissionLevel | None
    trigger: str
    hint: str | None = None


@event("firewall.alert")
class FirewallAlert(EventData):
    kind: str
    message: str
    session_id: str | None = None
    details: JSON = Field(default_factory=dict)


@event("firewall.response_refused")
class ResponseRefused(EventData):
    """HumanGate refused an answer: no pending request, other arguments, self-approval, not a decision."""

    execution_id: str
    session_id: str | None = None
    responder: Principal
    response: str
    reason: str
    status: int = 409
    response_event_id: str | None = None


@event("firewall.session_resumed")
class SessionResumed(EventData):
    """A paused session (first-stage abort) continues: a person approved one of its held calls."""

    session_id: str
    by: Principal


@event("firewall.hint_issued")
class HintIssued(EventData):
    """Something learned from the approver for the agent's prompts: ``avoid`` a tool, the user is ``unsure``."""

    tool: str
    kind: str
    message: str
    session_id: str | None = None


@event("policy.path_granted")
class PathGranted(EventData):
    """The session's user layer now allows ``tool`` on ``path`` and below it: a person authorised it
    by answering the agent's permission request (``request_id``). Both walls honour it: the
    firewall's sandbox layer and the executor's readable roots."""

    session_id: str
    tool: str
    path: str
    request_id: str
    granted_by: Principal


@event("policy.catalogue_changed")
class CatalogueChanged(EventData):
    """The tools the firewall judges from changed, after the executor announced its catalogue: every
    tool now, the tools withdrawn (name → why: a call of one is refused), and what this change added,
    changed and withdrew."""

    tools: list[AnnouncedTool]
    withdrawn: dict[str, str] = Field(default_factory=dict)
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    reason: str = ""
    # MCP tools cannot change behind the approver's back: the fingerprint (name, description, input
    # schema, hints) an admin accepted for each (the first one seen is accepted as it is), the tools
    # whose fingerprint now differs from it (name → what changed: held at CONFIRM or above until an
    # admin accepts, ``policy.tool_change_accepted``), and the tools this change held.
    accepted: dict[str, str] = Field(default_factory=dict)
    unreviewed: dict[str, str] = Field(default_factory=dict)
    held: list[str] = Field(default_factory=list)


@event("policy.tool_change_accepted")
class ToolChangeAccepted(EventData):
    """An admin looked at how an MCP tool changed and accepts it as it is now (its ``fingerprint``):
    its calls are judged by the policy again, no longer held for the change."""

    tool: str
    fingerprint: str
    change: str = ""
    accepted_by: Principal


@event("policy.agent_mode_set")
class AgentModeSet(EventData):
    """An agent principal's mode: supervised, delegated (with a grant) or audited."""

    principal: str
    mode: Literal["supervised", "delegated", "audited"]
    grant: JSON | None = None
    set_by: Principal


# --------------------------------------------------------------- executor --
class TraceStep(EventData):
    """The ExecutionStep: ``create_contract:<id>`` (a contract's ``trace``), or ``transition:<id>:<from>→<to>``
    (a move's :meth:`ExecutionTransitioned.step`)."""

    node_id: str
    action: str
    result: str | None = None
    metadata: JSON = Field(default_factory=dict)


@event("execution.transitioned")
class ExecutionTransitioned(EventData):
    execution_id: str
    session_id: str
    from_status: str
    to_status: str
    trigger: str
    actor: str
    timestamp: float
    reason: str | None = None
    result: str | None = None
    error_message: str | None = None
    irreversible: bool = False
    co_id: str | None = None
    # The moves the contract made before this one that nobody was told of yet, in order: the start of a
    # call the executor runs, written to its store before the call and announced with the call's end
    # (see ``execution.moves_held``). Each is one aggregate version after the one before it; this
    # event's own move is the event's version.
    earlier: list[ExecutionTransitioned] = Field(default_factory=list)

    def moves(self) -> list[ExecutionTransitioned]:
        """Every move this event tells of, in order: the earlier ones, then its own."""
        return [*self.earlier, self] if self.earlier else [self]

    def step(self) -> TraceStep:
        """The step this move adds to the execution trace, made from the move itself (it is not sent:
        every part of it is a field of the move; a move's result is the contract's once it has one, as
        only a contract's last move carries one)."""
        return TraceStep(
            node_id=self.actor,
            action=f"transition:{self.execution_id}:{self.from_status}→{self.to_status}",
            result=self.result,
            metadata={
                "trigger": self.trigger,
                "actor": self.actor,
                "contract_id": self.execution_id,
                "irreversible": self.irreversible,
            },
        )


@event("execution.contract_created")
class ContractCreated(EventData):
    """A contract entered PENDING (the ExecutionContract as created)."""

    execution_id: str
    session_id: str
    action_type: ActionType
    action_detail: JSON
    tool: str | None = None
    args: JSON = Field(default_factory=dict)
    irreversible: bool = False
    idempotent: bool = False
    idempotency_key: str | None = None
    timeout_seconds: float | None = None
    co_id: str | None = None
    proposer: Principal
    depends_on: str | None = None
    created_at: float
    runs_at: RunsAt = "executor"
    # The proposer's own one-line account of the action, when it gave one (else the action is said
    # from its tool and arguments: ``overseer_events.summary``).
    summary: str | None = None
    # The ``create_contract:<id>`` step (node_id: the proposing service).
    trace: TraceStep | None = None
    # The moves the contract made the moment it was decided on, in order, each as its own
    # ``execution.transitioned`` would say it (a started call: PENDING→RUNNING; a held one: on to
    # WAITING; and its end, when it ended in that instant: a refusal, or a read-only call the executor
    # ran before its commit). Every later move is an ``execution.transitioned`` of its own, so whoever
    # waits for ends reads those and the ends these carry. The event's aggregate version is the one
    # after its last move (the creation itself is version 1, each move one more).
    transitions: list[ExecutionTransitioned] = Field(default_factory=list)

    @cached_property
    def ended(self) -> ExecutionTransitioned | None:
        """The end among the moves it made at once, if it ended in the instant it was announced (worked
        out once: the firewall asks it of each contract in several places)."""
        return next((moved for moved in self.transitions if is_terminal(moved.to_status)), None)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, whose end is worked out again from its own moves (a copy keeps the original's cache)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("ended", None)
        return copied


@event("execution.co_moved")
class CoExecutionMoved(EventData):
    """A contract that names a Cognitive Object was announced or moved: where it stands now.

    Published beside the contract's own event (its ``execution.contract_created`` or
    ``execution.transitioned``), for the COL, which links the execution to the object and reports how
    it ended. A contract that names no object (most of them) has none, so the COL reads no contract
    events at all. Its aggregate is :func:`co_moved_aggregate`, its version the contract event's.
    """

    execution_id: str
    session_id: str
    co_id: str
    status: str


def co_moved_aggregate(execution_id: str) -> str:
    """The aggregate of a contract's ``execution.co_moved`` (its versions are the contract's)."""
    return f"co:{execution_id}"


@event("execution.moves_held")
class MovesHeld(EventData):
    """Moves of a contract written to the executor's store and not yet announced (kept in the store,
    never published): the start of a call the executor runs is made durable before the call, and told
    with the call's end, in one event (its ``transitions``, or an ``execution.transitioned``'s
    ``earlier``), or on its own once the call has run for ``[executor] announce_running_after_seconds``.
    ``moves`` are all the contract holds back so far. Its aggregate is :func:`held_aggregate`."""

    execution_id: str
    moves: list[ExecutionTransitioned]


def held_aggregate(execution_id: str) -> str:
    """The aggregate of a contract's ``execution.moves_held`` (apart from the contract's own versions,
    which the moves take only when they are announced)."""
    return f"held:{execution_id}"


@event("execution.contract_drafted")
class ContractDrafted(EventData):
    """A proposal the executor holds as a PENDING contract until it is decided on (version 0, kept in
    the executor's store, never published): the contract is announced, as ``execution.contract_created``
    with its first moves, when the firewall's verdict (or a cancellation) moves it."""

    contract: ContractCreated


@event("ecs.requested")
class EcsRequested(EventData):
    """An approval form for a human: an approval, a reconciliation (outcome unknown) or a confirmation."""

    execution_id: str
    session_id: str
    kind: ApprovalKind
    tool: str | None = None
    args: JSON = Field(default_factory=dict)
    args_hash: str
    level: PermissionLevel | None = None
    preview: JSON | None = None
    message: str | None = None
    requested_by: Principal
    requested_at: float


@event("ecs.closed")
class EcsClosed(EventData):
    """An approval form closed: its contract left WAITING (a decision resumed it, or it was cancelled or
    timed out), so nothing can be decided on that form any more. The form is the ``ecs.requested`` of
    this execution with this ``requested_at``."""

    execution_id: str
    session_id: str
    kind: ApprovalKind
    requested_at: float
    trigger: str  # what moved the contract out of WAITING: resume, cancel or timeout


def form_aggregate(execution_id: str, requested_at: float) -> str:
    """The aggregate of a form's ``ecs.closed`` (each form closes once): the execution and the form's time."""
    return f"form:{execution_id}:{requested_at!r}"


@event("tools.announced")
class ToolsAnnounced(EventData):
    """The executor's whole tool catalogue, announced when it starts and whenever it changes (an MCP
    server started, stopped, added, removed, or said its tools changed). A tool missing from the list
    it announced before is withdrawn: nobody can run it now."""

    tools: list[AnnouncedTool]
    reason: str = ""
    # A tool name two sources offer (name → the sources): offered by neither, a call of it is refused.
    collisions: dict[str, list[str]] = Field(default_factory=dict)


# --------------------------------------------------------------------- col --
@event("co.created")
class CoCreated(EventData):
    co_id: str
    title: str
    description: str = ""
    semantic_type: str | None = None
    domain_tag: str | None = None
    intent_category: str | None = None
    external_references: list[dict[str, str]] = Field(default_factory=list)
    related_co_ids: list[dict[str, str]] = Field(default_factory=list)
    created_by: str
    conversation_id: str | None = None
    creation_context: str | None = None
    created_at: float
    command_id: str | None = None


@event("co.updated")
class CoUpdated(EventData):
    co_id: str
    changes: JSON
    command_id: str | None = None


@event("co.transitioned")
class CoTransitioned(EventData):
    co_id: str
    from_status: str
    to_status: str
    trigger: str
    actor: str
    timestamp: float
    reason: str | None = None
    command_id: str | None = None


@event("co.execution_linked")
class CoExecutionLinked(EventData):
    co_id: str
    execution_id: str
    command_id: str | None = None


@event("co.memory_linked")
class CoMemoryLinked(EventData):
    co_id: str
    memory_id: str
    command_id: str | None = None


@event("co.execution_reported")
class CoExecutionReported(EventData):
    co_id: str
    execution_id: str
    outcome: Literal["completed", "failed", "rejected", "cancelled"]


@event("co.suggestion_recorded")
class CoSuggestionRecorded(EventData):
    suggestion_id: str
    kind: Literal["create", "transition"]
    co_id: str | None = None
    trigger: str | None = None
    fields: JSON = Field(default_factory=dict)
    reason: str | None = None


@event("co.suggestion_decided")
class CoSuggestionDecided(EventData):
    suggestion_id: str
    decision: Literal["confirm", "dismiss"]
    command_id: str | None = None


@event("co.command_rejected")
class CoCommandRejected(EventData):
    command_id: str
    co_id: str | None = None
    status: int
    detail: str
    legal_triggers: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- observer --
@event("observation.execution_state")
class ExecutionStateObserved(EventData):
    """The SSE ``execution_state`` payload, one per transition."""

    execution_id: str
    session_id: str
    action_summary: str
    from_status: str
    to_status: str
    trigger: str
    actor_category: str
    is_terminal: bool
    is_resumable: bool
    has_side_effects: bool
    timestamp: float


@event("observation.execution_fact")
class ExecutionFactObserved(EventData):
    """The memory execution summary for a terminal contract."""

    execution_id: str
    session_id: str
    action_type: str
    action_summary: str
    final_status: str
    irreversible: bool
    duration_ms: float | None = None
    result_summary: str | None = None
    error_summary: str | None = None
    co_id: str | None = None
    # The contract's consequence view as it ended (full result): what an agent answers from.
    consequence: ExecutionConsequenceView | None = None
