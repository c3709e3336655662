"""Request and response bodies of the REST API, with the examples the OpenAPI document shows.

Observation bodies are produced by the observer and passed through
untouched; the models here document them field for field. Models of answers
allow extra fields: services may add fields, never rename or drop them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from overseer_events.canonical import MAX_DEPTH
from overseer_events.catalogue import NoticeKind
from overseer_events.co_fields import (
    DESCRIPTION_MAX_CHARS,
    ID_MAX_CHARS,
    MAX_EXTERNAL_REFERENCES,
    MAX_RELATED_COS,
    REASON_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    CoRelation,
    ExternalReference,
)
from overseer_gateway.domain.actions import (
    ID,
    SESSION_ID,
    TOOL_NAME,
    args_problem,
    id_problem,
    key_problem,
    session_id_problem,
    tool_name_problem,
)

MAX_TEXT = 4000


def refuse(problem: str | None) -> None:
    """A field validator's refusal: the message is the 422's detail for that field."""
    if problem:
        raise ValueError(problem)


# What makes each string field of an ActionRequest malformed beyond its length (None: nothing).
ACTION_FIELD_PROBLEMS: dict[str, Callable[[str], str | None]] = {
    "tool": tool_name_problem,
    "session_id": session_id_problem,
    "co_id": partial(id_problem, "CO id"),
    "idempotency_key": key_problem,
}


class Strict(BaseModel):
    """A request body: unknown fields are refused, so typos get a 422 instead of being ignored; no
    type coercion either (``"confidence": false`` or ``"args_hash": 42`` are errors, not guesses)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class Problem(Answer):
    """RFC 9457 problem details (``application/problem+json``)."""

    type: str = Field(examples=["about:blank"])
    title: str = Field(examples=["Conflict"])
    status: int = Field(examples=[409])
    detail: str = Field(examples=["execution 0190… is completed, not waiting for a decision"])


# ------------------------------------------------------------------ health --
ServiceState = str


class Health(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "status": "ok",
                    "services": {
                        "gateway": "ok",
                        "reasoning": "ok",
                        "executor": "ok",
                        "col": "ok",
                        "firewall": "ok",
                        "observer": "ok",
                    },
                }
            ]
        }
    )

    status: Literal["ok", "degraded"]
    services: dict[str, ServiceState]


# ----------------------------------------------------------------- actions --
class ActionRequest(Strict):
    """A tool call an external agent wants to make; the firewall decides what happens to it."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"session_id": "s-42", "tool": "fs.list", "args": {"path": "."}},
                {
                    "session_id": "s-42",
                    "tool": "email.send",
                    "args": {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"},
                    "irreversible": True,
                    "confidence": 0.9,
                    "summary": "send a meeting invite to bob@example.com",
                },
            ]
        },
    )

    session_id: str = Field(
        min_length=1,
        max_length=128,
        description="the agent's session (correlation id)",
        json_schema_extra={"pattern": SESSION_ID.pattern},
    )
    tool: str = Field(
        min_length=1,
        max_length=128,
        description="a tool name such as fs.list or email.send",
        json_schema_extra={"pattern": "^" + TOOL_NAME.pattern + "$"},
    )
    args: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "the tool's arguments. The whole body may nest arrays and objects at most "
            "`gateway.max_json_depth` levels deep (32 by default, so `args` 31; never more than "
            f"{MAX_DEPTH}), else 422; no NUL character anywhere, and for `email.send` no control "
            "character (NUL, CR, LF…) in `to`, `cc`, `reply_to` or `subject`"
        ),
    )
    irreversible: bool | None = Field(default=None, description="the agent's own claim; the tool's flag wins")
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, description="the agent's confidence, 0..1")
    co_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="the Cognitive Object this serves",
        json_schema_extra={"pattern": ID.pattern},
    )
    summary: str | None = Field(default=None, max_length=500, description="what this does, in words")
    timeout_seconds: float | None = Field(
        default=None, gt=0, le=3600, description="tool time limit (addition)"
    )
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="explicit key (addition): printable text, no control characters",
    )
    runs_at: Literal["executor", "agent"] = Field(
        default="executor",
        description=(
            "`agent`: the tool is the agent's own function and runs in its process. Once allowed "
            "(`GET /v1/actions/{id}/permission`), the agent runs it with the approved arguments and "
            "reports how it ended (`POST /v1/actions/{id}/outcome`); it need not be a registered tool"
        ),
    )

    @field_validator("tool", "session_id", "co_id", "idempotency_key")
    @classmethod
    def _well_formed(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            refuse(ACTION_FIELD_PROBLEMS[info.field_name or ""](value))
        return value

    @field_validator("args")
    @classmethod
    def _args(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        refuse(args_problem(info.data.get("tool"), value))
        return value


class Permission(Answer):
    """Whether the agent may run its own call now (``runs_at: agent``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f1e2-…",
                    "decision": "run",
                    "status": "running",
                    "args": {"path": "report.md"},
                    "args_hash": "9f2c…",
                    "reason": None,
                    "refused_by": None,
                }
            ]
        }
    )

    execution_id: str
    decision: Literal["run", "wait", "stop"] = Field(
        description="`run`: allowed, run it now with `args` and report with `args_hash`; `wait`: not decided "
        "yet (held for a person, or not judged) after `wait` seconds, ask again; `stop`: it will not run "
        "(refused, rejected, cancelled), `reason` says why"
    )
    status: str = Field(
        description="the execution's state: pending, running, waiting, completed, failed, rejected or cancelled"
    )
    args: dict[str, Any] | None = Field(description="the approved arguments, when it may run")
    args_hash: str | None = Field(description="their hash, to send back with the outcome")
    reason: str | None = None
    refused_by: Literal["firewall", "person"] | None = Field(
        default=None, description="who stopped it: the firewall (denied) or a person (rejected, cancelled)"
    )


class OutcomeRequest(Strict):
    """How a call the agent ran in its own process ended."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"status": "completed", "result": "saved 3 lines", "args_hash": "9f2c…"},
                {"status": "failed", "error": "disk full", "args_hash": "9f2c…"},
            ]
        },
    )

    status: Literal["completed", "failed"]
    result: str | None = Field(default=None, max_length=16_000, description="what it returned (completed)")
    error: str | None = Field(default=None, max_length=16_000, description="why it failed (failed)")
    args_hash: str = Field(
        min_length=1, max_length=128, description="the hash of the arguments it ran with: the approved ones'"
    )


class OutcomeRecorded(Answer):
    execution_id: str
    event_id: str


class ActionAccepted(Answer):
    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [{"execution_id": "0190f1e2-…"}]})

    execution_id: str


# ------------------------------------------------------------------- tools --
class ToolView(Answer):
    """A tool an agent may propose: registered by the executor, built in or from an MCP server."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "email.send",
                    "description": "Send an e-mail",
                    "input_schema": {
                        "type": "object",
                        "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
                        "required": ["to", "subject"],
                    },
                    "irreversible": True,
                    "idempotent": False,
                    "level": "APPROVE",
                    "time_limit_seconds": 30.0,
                    "source": "builtin",
                }
            ]
        }
    )

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict, description="JSON Schema of the arguments")
    irreversible: bool = False
    idempotent: bool = False
    level: str | None = Field(default=None, description="the level the tool declares for itself, if any")
    time_limit_seconds: float | None = None
    source: str | None = Field(default=None, description="`builtin`, or the MCP server it comes from")


# --------------------------------------------------------------- approvals --
class ApprovalItem(Answer):
    """One open question for a person: an approval, or a reconciliation (outcome unknown after a crash)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f1e2-…",
                    "kind": "approval",
                    "session_id": "s-42",
                    "tool": "email.send",
                    "args": {"to": "bob@example.com", "subject": "Meeting"},
                    "args_hash": "9f2c…",
                    "level": "APPROVE",
                    "preview": {"summary": "send mail to bob@example.com"},
                    "requested_at": 1763780000.5,
                    "requested_by": "agent:agent",
                    "message": None,
                    "status": "pending",
                    "escalated": False,
                }
            ]
        },
    )

    execution_id: str
    kind: str
    session_id: str | None = None
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    args_hash: str
    level: str | None = None
    preview: Any = None
    requested_at: float | None = None
    requested_by: str | None = Field(default=None, description="the proposer, as kind:id")
    escalated: bool = Field(
        default=False,
        description="nobody answered in time, so the firewall escalated the question to an admin "
        "(listed first); any operator may still answer it",
    )


class DecisionRequest(Strict):
    """``approve``/``reject`` an approval card, or say what really happened (``completed``/``failed``)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"decision": "approve", "args_hash": "9f2c…", "comment": "fine, send it"},
                {"decision": "failed", "args_hash": "9f2c…"},
            ]
        },
    )

    decision: Literal["approve", "reject", "completed", "failed"]
    args_hash: str = Field(min_length=1, max_length=256, description="the hash shown with the card")
    comment: str | None = Field(default=None, max_length=MAX_TEXT)
    reason: str | None = Field(default=None, max_length=MAX_TEXT, description="alias of comment")


class LinkDecisionRequest(Strict):
    """The confirming click on an approval link: the link decides; a comment may go with it."""

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra={"examples": [{"comment": "checked the recipient"}]}
    )

    comment: str | None = Field(default=None, max_length=MAX_TEXT)


class LinkView(Answer):
    """What an approval link stands for, and the card it decides (opening a link decides nothing)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f1e2-…",
                    "decision": "approve",
                    "approver": "alice",
                    "channel": "admins",
                    "state": "open",
                    "expires_at": 1763866400.0,
                    "card": {"tool": "email.send", "args": {"to": "bob@example.com"}, "args_hash": "9f2c…"},
                }
            ]
        },
    )

    execution_id: str
    decision: str
    approver: str
    channel: str
    state: Literal["open", "used", "closed"] = Field(
        description="open: the click decides; used: this link decided already; closed: the call no longer "
        "waits for this decision (decided another way, or ended)"
    )
    expires_at: float
    card: dict[str, Any] | None = Field(description="the approval card as the channel was shown it")


class ToolChangeAcceptedView(Answer):
    """The change an admin accepted: the tool, what had changed, and the fingerprint now accepted."""

    tool: str
    change: str
    fingerprint: str


class NoticeView(Answer):
    """One approval notice to one channel: how many attempts, and how the last one went."""

    delivery_id: str
    notice: NoticeKind
    channel: str
    attempts: int
    state: Literal["pending", "delivered", "failed", "closed"]
    due_at: float
    detail: str


class DecisionRecorded(Answer):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f1e2-…",
                    "decision": "approve",
                    "args_hash": "9f2c…",
                    "decided_by": {"kind": "operator", "id": "operator"},
                    "event_id": "0190f1e3-…",
                }
            ]
        },
    )

    execution_id: str
    decision: str
    args_hash: str
    decided_by: dict[str, str]
    event_id: str


# ------------------------------------------------------------- observation --
# The observation models are the observer's contract, shared from overseer_events.views.
# ---------------------------------------------------------- audit, policy --
class AuditRecord(Answer):
    index: int
    prev_hash: str
    hash: str


class AuditChains(Answer):
    """How many audit chains the firewall keeps: one per firewall replica, each read with
    ``GET /v1/audit?chain=k`` (0 to chains - 1)."""

    chains: int = Field(ge=1)


class AuditVerification(Answer):
    """The firewall's audit chain recomputed, and checked against the heads it published on the event stream."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "ok": True,
                    "records": 12,
                    "first_broken": None,
                    "reason": None,
                    "anchored": 4,
                    "anchored_through": 12,
                    "published_through": 12,
                    "anchor_mismatch": None,
                    "anchor_error": None,
                }
            ]
        },
    )

    ok: bool
    records: int
    first_broken: int | None
    reason: str | None = None
    anchored: int | None = Field(
        None, description="published heads checked; null: the stream could not be read"
    )
    anchored_through: int = Field(0, description="the last record a matching published head vouches for")
    published_through: int = Field(0, description="the last record a head was published for")
    anchor_mismatch: int | None = Field(
        None, description="the record of the first published head the chain contradicts"
    )
    anchor_error: str | None = Field(None, description="why the published heads could not be read")
    chain: int | None = Field(
        None, description="which chain: a firewall running as several replicas keeps one per replica"
    )
    chains: list[dict[str, Any]] | None = Field(
        None,
        description="each chain's verification, when the firewall runs as several replicas (the answer's "
        "own fields are then the first broken chain's, with records counted over all)",
    )


class PolicyDocument(Answer):
    """An admin policy layer as the firewall reads it (validated by the firewall)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"examples": [{"tools": {"fs.write": "CONFIRM", "email.send": "APPROVE"}}]},
    )


# ------------------------------------------------------------ conversation --
class Attachment(Strict):
    """A file the message refers to: a path inside the tool sandbox (relative to it, or absolute below it)."""

    path: str = Field(min_length=1, max_length=1024)


class MessageRequest(Strict):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {"text": "send a meeting invite to bob@example.com"},
                {"text": "帮我分析这个报错日志", "attachments": [{"path": "logs/app.log"}]},
            ]
        },
    )

    text: str = Field(
        default="", description="what the person says; at most `[gateway] max_message_chars` characters"
    )
    attachments: list[Attachment] = Field(
        default_factory=list, description="files the message refers to, inside the tool sandbox"
    )


class MessageAccepted(Answer):
    session_id: str
    message_id: str = Field(description="the message's id, which is also the id of the turn that answers it")
    turn_id: str = Field(description="the agent's turn for this message: its steps and reply carry this id")
    event_id: str = Field(description="the `conversation.message_received` event (same as message_id)")


class AnswerRequest(Strict):
    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra={"examples": [{"answer": "authorize and retry"}]}
    )

    answer: str = Field(description="the person's answer: free text, or one of the question's options")


class AnswerAccepted(Answer):
    session_id: str
    request_id: str
    event_id: str = Field(description="the `conversation.answer_received` event")


TurnStatus = Literal["thinking", "waiting_for_tool", "waiting_for_human", "done"]


class SessionSummary(Answer):
    session_id: str
    status: TurnStatus
    turn_id: str | None = None
    title: str = Field(description="the session's first message, shortened")
    updated_at: float
    queued: int = Field(description="messages waiting for the agent to finish its current turn")


class Question(Answer):
    """A question the agent asked and waits on (``type``: confirm, clarify, choose or permission)."""

    request_id: str
    type: Literal["confirm", "clarify", "choose", "permission"]
    msg: str
    options: list[str] = Field(default_factory=list)
    grant: dict[str, str] | None = Field(
        default=None,
        description="for a permission: the tool and path an authorising answer allows in this session",
    )


class SessionView(Answer):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "session_id": "demo",
                    "title": "send a meeting invite to bob@example.com",
                    "status": "waiting_for_human",
                    "turn_id": "0190f1e2-7c4a-7b1e-9a51-3f0e2d1c4b5a",
                    "updated_at": 1732363200.5,
                    "queued": 0,
                    "history": [
                        {"role": "user", "content": "send a meeting invite to bob@example.com"},
                        {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "id": "0190f1e2-7c4a-7b1e-9a51-3f0e2d1c4b5a:5",
                                    "type": "function",
                                    "function": {
                                        "name": "email.send",
                                        "arguments": '{"to": "bob@example.com"}',
                                    },
                                }
                            ],
                        },
                    ],
                    "hitl_request": None,
                    "approval": {
                        "execution_id": "0190f1e2-7c4a-7b1e-9a51-3f0e2d1c4b5a:5",
                        "kind": "approval",
                        "tool": "email.send",
                        "args": {"to": "bob@example.com"},
                        "args_hash": "9f2c…",
                        "level": "APPROVE",
                        "preview": None,
                        "message": None,
                    },
                    "trace": [],
                    "last_human_input": None,
                    "usage": {
                        "model_calls": 2,
                        "prompt_tokens": 812,
                        "completion_tokens": 64,
                        "total_tokens": 876,
                        "last_turn": {
                            "model_calls": 2,
                            "prompt_tokens": 812,
                            "completion_tokens": 64,
                            "total_tokens": 876,
                        },
                        "by_model": {
                            "gpt-4.1": {
                                "model_calls": 1,
                                "prompt_tokens": 760,
                                "completion_tokens": 58,
                                "total_tokens": 818,
                            },
                            "gpt-4.1-nano": {
                                "model_calls": 1,
                                "prompt_tokens": 52,
                                "completion_tokens": 6,
                                "total_tokens": 58,
                            },
                        },
                    },
                }
            ]
        },
    )

    session_id: str
    title: str
    status: TurnStatus = Field(
        description="thinking, waiting_for_tool (a tool call runs), waiting_for_human (an approval card or a "
        "question waits for you), done"
    )
    turn_id: str | None = None
    updated_at: float
    queued: int
    history: list[dict[str, Any]] = Field(description="the dialogue in the OpenAI chat message format")
    hitl_request: Question | None = Field(
        description="the question the agent waits on: answer it with POST /v1/sessions/{id}/hitl/{request_id}"
    )
    approval: dict[str, Any] | None = Field(
        description="the approval card the agent's tool call waits on: decide it with POST /v1/approvals/{execution_id}"
    )
    trace: list[dict[str, Any]] = Field(description="the turn's cognitive trace: one record per node step")
    last_human_input: str | None = None
    usage: dict[str, Any] = Field(
        description="the model calls and tokens the session used, its last turn's in `last_turn`, and each "
        "model's in `by_model` (a small model may read the messages while a stronger one plans; zeros while "
        "the offline planner plans)"
    )


class MemoryHit(Answer):
    memory_id: str
    session_id: str | None = None
    kind: str = Field(description="conversation, note or execution")
    text: str
    execution_id: str | None = None
    co_id: str | None = None
    at: float
    score: float


# ------------------------------------------------------- cognitive objects --
# The col service's routes (routes_cos.py). Their bodies are checked with the col's own limits, so most
# bad input is refused before any event exists; unlike the bodies above, they coerce types as
# pydantic does by default.
CoStatus = Literal["emerging", "active", "waiting", "blocked", "stable", "archived"]


class CoBody(BaseModel):
    """A request body about Cognitive Objects: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


def _not_blank(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be blank")
    return value


class CoCreateRequest(CoBody):
    """The fields a person gives; the CO starts EMERGING, ``created_by`` is the caller's role."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "title": "准备下周的技术分享",
                    "description": "主题确定为 LangGraph",
                    "semantic_type": "project",
                    "domain_tag": "work",
                    "intent_category": "track",
                    "external_references": [
                        {"type": "url", "value": "https://example.com/slides", "label": "slides"}
                    ],
                }
            ]
        },
    )

    title: str = Field(min_length=1, max_length=TITLE_MAX_CHARS)
    description: str = Field(default="", max_length=DESCRIPTION_MAX_CHARS)
    semantic_type: str | None = Field(
        default=None, max_length=TAG_MAX_CHARS, examples=["task", "project", "habit"]
    )
    domain_tag: str | None = Field(
        default=None, max_length=TAG_MAX_CHARS, examples=["work", "personal", "health"]
    )
    intent_category: str | None = Field(default=None, max_length=TAG_MAX_CHARS, examples=["track", "remind"])
    external_references: list[ExternalReference] = Field(
        default_factory=list, max_length=MAX_EXTERNAL_REFERENCES
    )
    related_co_ids: list[CoRelation] = Field(default_factory=list, max_length=MAX_RELATED_COS)
    conversation_id: str | None = Field(
        default=None, max_length=ID_MAX_CHARS, description="the session it came from"
    )

    _title = field_validator("title")(_not_blank)


class CoPatchRequest(CoBody):
    """Metadata to change; give only what changes (``null`` clears an optional field)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"title": "准备技术分享 (slides)", "description": "Thursday, room 3", "domain_tag": "work"}
            ]
        },
    )

    title: str | None = Field(default=None, min_length=1, max_length=TITLE_MAX_CHARS)
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX_CHARS)
    semantic_type: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    domain_tag: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    intent_category: str | None = Field(default=None, max_length=TAG_MAX_CHARS)
    external_references: list[ExternalReference] | None = Field(
        default=None, max_length=MAX_EXTERNAL_REFERENCES
    )
    related_co_ids: list[CoRelation] | None = Field(default=None, max_length=MAX_RELATED_COS)

    _title = field_validator("title")(_not_blank)

    @model_validator(mode="before")
    @classmethod
    def _status_moves_by_transition(cls, data: Any) -> Any:
        if isinstance(data, dict) and "status" in data:
            raise ValueError("status changes only through POST /v1/cos/{co_id}/transitions")
        return data

    def changes(self) -> dict[str, Any]:
        dumped = self.model_dump(mode="json")
        return {key: dumped[key] for key in self.model_fields_set}


class TransitionRequest(CoBody):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"trigger": "clarify", "reason": "scope agreed"}]}
    )

    trigger: str = Field(
        min_length=1, max_length=64, examples=["clarify"], description="one of the CO machine's triggers"
    )
    reason: str | None = Field(default=None, max_length=REASON_MAX_CHARS)


class LinkRequest(CoBody):
    """Link one execution or one memory to the CO (exactly one of the two)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"execution_id": "01a20acc-25d3-7332-a57c-80272a6567c5"}, {"memory_id": "t-42:m1"}]
        },
    )

    execution_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX_CHARS)
    memory_id: str | None = Field(default=None, min_length=1, max_length=ID_MAX_CHARS)

    @model_validator(mode="after")
    def _exactly_one(self) -> LinkRequest:
        if (self.execution_id is None) == (self.memory_id is None):
            raise ValueError("give exactly one of execution_id or memory_id")
        return self


class SuggestionDecisionRequest(CoBody):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"decision": "confirm"}]})

    decision: Literal["confirm", "dismiss"]


# Answers: documented; the col may add fields.
class CoTransitionRecord(Answer):
    """One status transition of a CO (its ``co.transitioned``); an execution's is a ``TransitionRecord``."""

    from_: str = Field(alias="from")
    to: str
    trigger: str
    timestamp: float
    actor: str
    reason: str | None = None


class ExecutionReport(Answer):
    execution_id: str
    outcome: Literal["completed", "failed", "rejected", "cancelled"]
    reported_at: float


class CognitiveObjectView(Answer):
    """A Cognitive Object, every field; one CO also carries its ``execution_reports``."""

    co_id: str
    title: str
    description: str
    semantic_type: str | None
    domain_tag: str | None
    intent_category: str | None
    status: CoStatus
    transitions: list[CoTransitionRecord]
    linked_execution_ids: list[str]
    linked_memory_ids: list[str]
    external_references: list[dict[str, str]]
    related_co_ids: list[dict[str, str]]
    created_at: float
    updated_at: float
    created_by: str
    conversation_id: str | None
    creation_context: str | None
    execution_reports: list[ExecutionReport] | None = None


class SuggestionView(Answer):
    suggestion_id: str
    kind: Literal["create", "transition"]
    co_id: str | None
    trigger: str | None
    fields: dict[str, Any]
    reason: str | None
    session_id: str | None
    status: Literal["pending", "confirmed", "dismissed"]
    suggested_at: float
    decided_at: float | None
    result_co_id: str | None


class SuggestionDecided(Answer):
    suggestion: SuggestionView
    co: CognitiveObjectView | None = Field(description="the CO the confirmation created or moved")


# ----------------------------------------------------------------- console --
class Me(Answer):
    """The caller a token stands for: what the console shows, and which controls it hides."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"role": "operator", "name": "operator"}]}
    )

    role: Literal["viewer", "agent", "operator", "admin"]
    name: str = Field(description="the principal id the token acts as (operator:<name> when deciding)")


# ------------------------------------------------------- operator controls --
class ModeGrant(Strict):
    """What a delegated agent may do without asking: tools (names or globs; an irreversible tool only by
    its exact name) and, optionally, a budget of steps and of seconds from now, and per session a budget
    of tool calls and of model tokens (past one, the session's next call is held for a person)."""

    tools: list[str] = Field(min_length=1, max_length=100)
    max_steps: int | None = Field(default=None, ge=1, le=1_000_000)
    seconds: float | None = Field(default=None, gt=0, le=10 * 365 * 86400)
    max_session_calls: int | None = Field(default=None, ge=1, le=1_000_000_000)
    max_session_tokens: int | None = Field(default=None, ge=1, le=10**12)


class AgentModeRequest(Strict):
    """An agent principal's mode: ``supervised`` (the default), ``delegated`` (needs a grant), ``audited``."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "mode": "delegated",
                    "grant": {"tools": ["fs.read", "fs.list"], "max_steps": 20, "seconds": 3600},
                },
                {"mode": "supervised"},
                {"mode": "audited"},
            ]
        },
    )

    mode: Literal["supervised", "delegated", "audited"]
    grant: ModeGrant | None = None


class AgentView(Answer):
    principal: str = Field(examples=["agent:helper"])
    mode: Literal["supervised", "delegated", "audited"]
    grant: dict[str, Any] | None = Field(
        description="tools, max_steps, expires_at, granted_at (epoch seconds), max_session_calls and "
        "max_session_tokens of a delegated agent"
    )
    steps_used: int = Field(description="steps taken inside the grant so far")


class AgentsList(Answer):
    """Every agent principal with a mode set; an agent not listed is ``default_mode``."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "default_mode": "supervised",
                    "agents": [
                        {
                            "principal": "agent:helper",
                            "mode": "delegated",
                            "grant": {
                                "tools": ["fs.read"],
                                "max_steps": 20,
                                "expires_at": 1790000000.0,
                                "granted_at": 1789996400.0,
                            },
                            "steps_used": 3,
                        }
                    ],
                }
            ]
        },
    )

    default_mode: Literal["supervised"]
    agents: list[AgentView]


class ControlRequest(Strict):
    """Why, recorded with the event and in the audit chain (optional)."""

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra={"examples": [{"reason": "it mails the wrong list"}]}
    )

    reason: str | None = Field(default=None, max_length=500)


class SessionControl(Answer):
    """A session's stop state after a pause, resume or cancel; ``changed`` is false when nothing was recorded."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"examples": [{"session_id": "s-1", "paused": True, "aborts": 1, "changed": True}]},
    )

    session_id: str
    paused: bool = Field(description="new proposals of the session are held for a person")
    aborts: int = Field(description="1 after a pause, 2 and more after each cancel; 0 once resumed")
    changed: bool


class ExecutionCancelled(Answer):
    """The contract after its cancellation (the executor's view of it)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "execution_id": "0190f3a2-7c1e-7d2a-9b1f-3c4d5e6f7a8b",
                    "session_id": "s-1",
                    "tool": "email.send",
                    "status": "cancelled",
                    "error_message": "cancelled by operator:alice: wrong recipient",
                }
            ]
        },
    )

    execution_id: str
    session_id: str
    status: Literal["cancelled"]


class PerceptionStats(Answer):
    """What the firewall perceives of the people who answer it: per tool (approvals, rejections, streaks,
    latency, outcomes) and per approver (the approval streak and its latencies: rubber-stamping shows
    as a long streak of fast approvals)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "tools": {
                        "email.send": {
                            "approvals": 4,
                            "rejections": 1,
                            "consecutive_rejections": 0,
                            "consecutive_approvals": 3,
                            "approval_rate": 0.8,
                            "mean_latency_ms": 5200.0,
                            "outcomes": {"success": 4},
                            "repeats": 0,
                        }
                    },
                    "approvers": {
                        "operator:alice": {"consecutive_approvals": 3, "streak_latencies_ms": [900.0, 700.0]}
                    },
                }
            ]
        },
    )

    tools: dict[str, dict[str, Any]]
    approvers: dict[str, dict[str, Any]]


class SafetyPrompt(Answer):
    """The safety prompt the reasoning service puts before the agent's own: the tools with their levels,
    and the constraints learned from hints."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "prompt": "You act through tools. Each call is judged by a firewall…",
                    "version": "1",
                    "confidence_floor": 0.7,
                    "constraints": ["email.send was rejected 3 times in a row: ask before mailing"],
                    "hints": [],
                }
            ]
        },
    )

    prompt: str
    constraints: list[str]
    hints: list[dict[str, Any]]
