"""Approval notices: what a channel is told about a held call, and the links that decide it.

A *notice* tells an approval channel that a call waits for a person (``held``) or that nobody
answered in time and an admin must (``escalated``). A webhook receives the approval card as
JSON (or as a Slack-compatible message), signed; a mail list receives it as a readable mail.
Each carries *approval links*: one per decision the card takes, each bound to the execution,
the exact arguments (their hash), the decision and the approver it acts as. Opening a link
shows the card and asks for one confirming click; the click is the decision.

Pure: no I/O. The gateway's adapters sign the links, send, and record every attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from overseer_events.catalogue import EcsRequested, NoticeKind
from overseer_gateway.domain.approvals import DECISIONS

SIGNATURE_HEADER = "Overseer-Signature"
"""``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">``: a receiver recomputes it with the shared
secret and refuses a timestamp older than a few minutes, so a captured request cannot be replayed."""


Card = EcsRequested
"""A held call as its approval card shows it: the executor's ``ecs.requested``, as the gateway was shown it."""

_DECISION_ORDER = ("approve", "completed", "reject", "failed")


def card_view(card: Card) -> dict[str, Any]:
    """The card as JSON for people and webhooks, the requester written ``kind:id``."""
    return {**card.model_dump(mode="json"), "requested_by": str(card.requested_by)}


def decisions_of(card: Card) -> tuple[str, ...]:
    """The decisions the card takes, the one that lets the call go first."""
    return tuple(sorted(DECISIONS.get(card.kind, ()), key=_DECISION_ORDER.index))


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notice of one card to one channel, as the sender picks it up: ``attempts`` made so far."""

    delivery_id: str
    execution_id: str
    notice: NoticeKind
    channel: str
    attempts: int
    card: Card


def delivery_id(card: Card, notice: NoticeKind, channel: str) -> str:
    """One notice of one card to one channel: a redelivered request or escalation never makes a second
    (an execution asked about twice — approved, then interrupted — has two cards, of two kinds)."""
    return f"{card.execution_id}:{card.kind}:{notice}:{channel}"


def retry_delay(attempt: int, *, base: float, cap: float) -> float:
    """Seconds before attempt ``attempt + 1``: ``base * 2^(attempt-1)``, at most ``cap``."""
    return float(min(cap, base * 2 ** max(0, attempt - 1)))


# ------------------------------------------------------------------------------ links ---
@dataclass(frozen=True, slots=True)
class LinkClaim:
    """What an approval link stands for: this decision, on these exact arguments, by this approver."""

    execution_id: str
    args_hash: str
    decision: str
    approver: str  # a principal name
    channel: str
    kind: str = "approval"
    link_id: str = ""
    expires_at: float = 0.0

    def as_payload(self) -> dict[str, str]:
        return {
            "e": self.execution_id,
            "h": self.args_hash,
            "d": self.decision,
            "p": self.approver,
            "c": self.channel,
            "k": self.kind,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], link_id: str, expires_at: float) -> LinkClaim:
        return cls(
            execution_id=str(payload["e"]),
            args_hash=str(payload["h"]),
            decision=str(payload["d"]),
            approver=str(payload["p"]),
            channel=str(payload["c"]),
            kind=str(payload.get("k", "approval")),
            link_id=link_id,
            expires_at=expires_at,
        )


def link_id_of(token: str) -> str:
    """A link's id: the hash of its token (the token itself is never stored or published)."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Links:
    """The approval links of one notice: decision → URL (none when the channel names no approver)."""

    by_decision: Mapping[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- bodies ---
_LABELS = {"approve": "Approve", "reject": "Reject", "completed": "It completed", "failed": "It failed"}


def preview_text(card: Card) -> str:
    """The firewall's preview as plain text: the mail as it will be sent, the diff, the command."""
    view = card.preview or {}
    match view.get("kind"):
        case "email":
            return str(view.get("rendered", ""))
        case "diff":
            return f"Changes to {view.get('path')}:\n{view.get('diff', '')}"
        case "shell":
            return f"$ {view.get('command')}   (in {view.get('cwd')})"
        case _:
            return str(view.get("summary") or json.dumps(dict(card.args), indent=2, ensure_ascii=False))


def headline(card: Card, notice: NoticeKind) -> str:
    what = card.tool or "a request"
    if notice == "escalated":
        return f"Escalated: nobody answered, an admin decides: {what}"
    if card.kind == "reconciliation":
        return f"Outcome unknown, tell what happened: {what}"
    return f"Approval needed: {what}" + (f" ({card.level})" if card.level else "")


def card_body(
    card: Card, notice: NoticeKind, delivery: str, links: Links, console_url: str
) -> dict[str, Any]:
    """The ``overseer`` webhook body: the whole card, the notice, and the links."""
    return {
        "type": f"approval.{notice}",
        "delivery_id": delivery,
        **card_view(card),
        "preview_text": preview_text(card),
        "links": dict(links.by_decision),
        "console_url": console_url,
    }


def slack_body(card: Card, notice: NoticeKind, links: Links, console_url: str) -> dict[str, Any]:
    """A Slack-compatible message: text for notifications, blocks for the card and link buttons."""
    title = headline(card, notice)
    fields = [
        {"type": "mrkdwn", "text": f"*Tool*\n`{card.tool}`"},
        {"type": "mrkdwn", "text": f"*Level*\n{card.level or '-'}"},
        {"type": "mrkdwn", "text": f"*Session*\n`{card.session_id}`"},
        {"type": "mrkdwn", "text": f"*Requested by*\n{card.requested_by}"},
    ]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}},
        {"type": "section", "fields": fields},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{preview_text(card)[:2900]}```"}},
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"Decision bound to args_hash `{card.args_hash}`"}],
        },
    ]
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": _LABELS.get(decision, decision)},
            "url": url,
            **({"style": "primary"} if decision in ("approve", "completed") else {"style": "danger"}),
        }
        for decision, url in links.by_decision.items()
    ]
    buttons.append(
        {"type": "button", "text": {"type": "plain_text", "text": "Open the console"}, "url": console_url}
    )
    blocks.append({"type": "actions", "elements": buttons})
    return {"text": title, "blocks": blocks}


def mail_text(card: Card, notice: NoticeKind, links: Links, console_url: str) -> tuple[str, str]:
    """The notice as a mail: its subject and a plain-text body a person reads in any client."""
    subject = f"[Overseer] {headline(card, notice)}"
    lines = [
        headline(card, notice),
        "",
        f"Tool:          {card.tool}",
        f"Level:         {card.level or '-'}",
        f"Session:       {card.session_id}",
        f"Requested by:  {card.requested_by}",
        f"Execution:     {card.execution_id}",
    ]
    if card.message:
        lines += ["", card.message]
    lines += ["", "What would run:", "", _indent(preview_text(card)), ""]
    lines += ["Arguments:", "", _indent(json.dumps(dict(card.args), indent=2, ensure_ascii=False)), ""]
    lines += [f"A decision is bound to these exact arguments: args_hash {card.args_hash}", ""]
    if links.by_decision:
        lines.append("Decide (each link asks you to confirm with one click, works once, and expires):")
        lines += [
            f"  {_LABELS.get(decision, decision)}: {url}" for decision, url in links.by_decision.items()
        ]
        lines.append("")
    lines.append(f"Or open the console: {console_url}")
    return subject, "\n".join(lines) + "\n"


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines() or [""])


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Overseer-Signature`` header value of ``body`` sent at ``timestamp``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def signature_valid(secret: str, header: str, body: bytes, *, now: float, tolerance: float = 300.0) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` and is at most ``tolerance`` seconds old (what a
    receiver checks; the tests' receiver does)."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), f"t={timestamp},v1={parts.get('v1', '')}")
