"""``email.send`` over real SMTP to the configured host (by default the local sink of ``overseer up``).

Irreversible and APPROVE by default. ``smtplib`` runs in a worker thread; its
socket timeout is kept inside the call's time limit so a cancelled call does
not keep talking to the server long after the contract ended.

Failure classes matter for retries: a refused or failed *connection* means
nothing was sent, so it is transient (retried with backoff); a refusal after
the message was handed over is final.
"""

from __future__ import annotations

import asyncio
import smtplib
from email.message import EmailMessage
from email.utils import formatdate
from typing import Any

from overseer.executor.adapters.tools.base import StaticToolPlugin
from overseer.executor.domain.tools import ToolCall, ToolError, ToolSpec, TransientToolError

ADDRESS = {"type": "string", "pattern": r"^[^@\s]+@[^@\s]+$"}
ADDRESSES = {"anyOf": [ADDRESS, {"type": "array", "items": ADDRESS, "minItems": 1}]}

SEND = ToolSpec(
    name="email.send",
    description="Send an e-mail over SMTP.",
    input_schema={
        "type": "object",
        "properties": {
            "to": ADDRESSES,
            "subject": {"type": "string"},
            "body": {"type": "string"},
            "cc": ADDRESSES,
            "reply_to": ADDRESS,
        },
        "required": ["to", "subject", "body"],
        "additionalProperties": False,
    },
    irreversible=True,
    level="APPROVE",
    time_limit_seconds=30,
)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


class EmailTool(StaticToolPlugin):
    def __init__(self, host: str, port: int, sender: str, timeout_seconds: float = 10.0) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.sender = sender
        self.timeout_seconds = timeout_seconds
        self.add(SEND, self.send)

    def compose(self, args: dict[str, Any], tc: ToolCall) -> EmailMessage:
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
