"""``email.send`` over real SMTP to the configured host (by default the local sink of ``overseer up``).

Irreversible and APPROVE by default. ``smtplib`` runs in a worker thread; its
socket timeout is kept inside the call's time limit so a cancelled call does
not keep talking to the server long after the contract ended.

Failure classes matter for retries: a refused or failed *connection* means
nothing was sent, so it is transient (retried with backoff); a refusal after
the message was handed over is final.

Every address (``to``, ``cc``, ``reply_to`` and the configured sender) must be one bare address
(``local@domain``, as :class:`email.headerregistry.Address` parses it, nothing left over), and no
header value may hold a control character (C0, DEL or C1: NUL, CR, LF, tab…). A call that breaks
this fails before any connection is made, with the reason: an address with a NUL or a CRLF in it
could otherwise cut the SMTP command short or smuggle in a recipient or header nobody approved.
The input schema says the same, so the registry refuses such a call even earlier.
"""

from __future__ import annotations

import asyncio
import re
import smtplib
from collections.abc import Iterator
from email.errors import HeaderDefect, HeaderParseError
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from overseer_executor.adapters.tools.base import StaticToolPlugin
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec, TransientToolError

# C0 controls, DEL and C1 controls: never in a header (NUL, CR and LF least of all).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NO_CONTROL = r"[^\x00-\x1f\x7f-\x9f]"
ADDRESS = {
    "type": "string",
    "maxLength": 320,
    "pattern": r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@\s\x00-\x1f\x7f-\x9f]+$",
}
ADDRESSES = {"anyOf": [ADDRESS, {"type": "array", "items": ADDRESS, "minItems": 1}]}
HEADER_TEXT = {"type": "string", "maxLength": 998, "pattern": f"^{_NO_CONTROL}*$"}

SEND = ToolSpec(
    name="email.send",
    description="Send an e-mail over SMTP.",
    input_schema={
        "type": "object",
        "properties": {
            "to": ADDRESSES,
            "subject": HEADER_TEXT,
            "body": {"type": "string"},
            "cc": ADDRESSES,
            "reply_to": ADDRESS,
        },
        "required": ["to", "subject", "body"],
        "additionalProperties": False,
    },
    irreversible=True,
    level="APPROVE",
    read_only=False,
    destructive=False,  # it adds a mail; it takes nothing away
    open_world=True,
    time_limit_seconds=30,
)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def control_characters(value: str) -> list[str]:
    """The control characters in ``value``, as escapes (``'\\x00'``, ``'\\r'``), first ones first."""
    return [repr(c)[1:-1] for c in dict.fromkeys(CONTROL.findall(value))]


def address_problem(value: Any) -> str | None:
    """Why ``value`` is not one bare e-mail address, or None when it is one."""
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    bad = control_characters(value)
    if bad:
        return f"{value!r} contains control characters ({', '.join(bad)})"
    try:
        parsed = Address(addr_spec=value)
    except (ValueError, IndexError, HeaderParseError, HeaderDefect) as exc:
        return f"{value!r} is not an e-mail address: {exc}"
    if not parsed.username or not parsed.domain or parsed.addr_spec != value:
        return f"{value!r} is not one bare e-mail address (local@domain)"
    return None


def header_problem(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    bad = control_characters(value)
    return f"{value!r} contains control characters ({', '.join(bad)})" if bad else None


def refusal(args: dict[str, Any], sender: str) -> str | None:
    """Why this call must not be sent (the first reason found), or None."""
    return next(_problems(args, sender), None)


def _problems(args: dict[str, Any], sender: str) -> Iterator[str]:
    """Every reason not to send, in the order they are looked for (lazily: the first one ends the search)."""
    yield from _recipients_problems("to", args.get("to"), required=True)
    yield from _recipients_problems("cc", args.get("cc"), required=False)
    if args.get("reply_to") is not None:
        yield from _labelled("reply_to", address_problem(args["reply_to"]))
    yield from _labelled("subject", header_problem(args.get("subject")))
    if not isinstance(args.get("body"), str):
        yield "body: a string is required"
    yield from _labelled("the configured sender (tools.email.sender)", address_problem(sender))


def _recipients_problems(name: str, values: Any, *, required: bool) -> Iterator[str]:
    if values is None and not required:
        return
    if not isinstance(values, str | list) or not values:
        yield f"{name}: an address or a non-empty list of addresses is required"
        return
    for value in _as_list(values):
        yield from _labelled(name, address_problem(value))


def _labelled(name: str, problem: str | None) -> Iterator[str]:
    if problem:
        yield f"{name}: {problem}"


class EmailTool(StaticToolPlugin):
    def __init__(self, host: str, port: int, sender: str, timeout_seconds: float = 10.0) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.sender = sender
        self.timeout_seconds = timeout_seconds
        self.add(SEND, self.send)

    def compose(self, args: dict[str, Any], tc: ToolCall) -> EmailMessage:
        """The message to send; raises :class:`ToolError` when an address or a header is malformed."""
        problem = refusal(args, self.sender)
        if problem:
            raise ToolError(f"email.send refused, nothing was sent: {problem}")
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = ", ".join(_as_list(args["to"]))
        if args.get("cc"):
            message["Cc"] = ", ".join(_as_list(args["cc"]))
        if args.get("reply_to"):
            message["Reply-To"] = args["reply_to"]
        message["Subject"] = args["subject"]
        message["Date"] = formatdate(localtime=False)
        if tc.execution_id:
            # A stable Message-ID per contract lets a receiver (or a human reconciling a crash)
            # recognise a duplicate.
            message["Message-ID"] = f"<{tc.execution_id}@overseer>"
            message["X-Overseer-Execution-Id"] = tc.execution_id
        message.set_content(args["body"])
        return message

    async def send(self, args: dict[str, Any], tc: ToolCall) -> str:
        message = self.compose(args, tc)
        recipients = _as_list(args["to"]) + _as_list(args.get("cc"))
        # A thread cannot be cancelled: keep its socket timeout inside the call's time limit.
        timeout = min(self.timeout_seconds, tc.time_limit_seconds or self.timeout_seconds)
        await asyncio.to_thread(self._deliver, message, recipients, timeout)
        return f"sent to {', '.join(recipients)} (Message-ID {message['Message-ID'] or 'none'})"

    def _deliver(self, message: EmailMessage, recipients: list[str], timeout: float) -> None:
        try:
            client = smtplib.SMTP(self.host, self.port, timeout=timeout, local_hostname="overseer")
        except OSError as exc:  # refused, unreachable, timed out: nothing was sent
            raise TransientToolError(f"SMTP connection to {self.host}:{self.port} failed: {exc}") from exc
        try:
            try:
                client.ehlo_or_helo_if_needed()
            except (smtplib.SMTPException, OSError) as exc:
                raise TransientToolError(f"SMTP greeting failed: {exc}") from exc
            try:
                refused = client.send_message(message, from_addr=self.sender, to_addrs=recipients)
            except smtplib.SMTPRecipientsRefused as exc:
                raise ToolError(f"SMTP refused every recipient: {exc.recipients}") from exc
            except smtplib.SMTPSenderRefused as exc:
                raise ToolError(f"SMTP refused the sender: {exc.smtp_code} {exc.smtp_error!r}") from exc
            except (smtplib.SMTPException, OSError) as exc:
                # The message may or may not have been accepted: never retried.
                raise ToolError(f"SMTP delivery failed: {exc}") from exc
            if refused:
                raise ToolError(f"SMTP refused some recipients: {sorted(refused)}")
        finally:
            try:
                client.quit()
            except (smtplib.SMTPException, OSError):
                client.close()
