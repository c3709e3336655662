"""The approval channels' transports and the approval links' signer.

Webhooks are POSTed with ``httpx``; mail goes through ``aiosmtplib``; links are signed and
timestamped with ``itsdangerous`` (an edited token does not verify, an old one is expired).
"""

from __future__ import annotations

import os
import secrets
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path

import aiosmtplib
import httpx
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer

from overseer_gateway.application.ports import BadLink, Sent
from overseer_gateway.domain.notices import LinkClaim, link_id_of
from overseer_gateway.settings import SmtpSettings

# A 4xx other than these says the request itself is wrong: sending it again changes nothing.
_RETRIED_CLIENT_ERRORS = frozenset({408, 409, 425, 429})


class HttpWebhooks:
    """:class:`~overseer_gateway.application.ports.Webhooks` over one pooled ``httpx.AsyncClient``."""

    def __init__(self, timeout: float) -> None:
        self.client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Sent:
        try:
            response = await self.client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return Sent(False, f"{type(exc).__name__}: {exc}".rstrip(": "))
        code = response.status_code
        if 200 <= code < 300:
            return Sent(True, f"{code} {response.reason_phrase}", code)
        retry = code >= 500 or code in _RETRIED_CLIENT_ERRORS
        return Sent(False, f"{code} {response.reason_phrase}: {response.text[:200]}", code, retry=retry)

    async def close(self) -> None:
        await self.client.aclose()


class SmtpMailer:
    """:class:`~overseer_gateway.application.ports.Mailer`: one SMTP conversation per delivery."""

    def __init__(self, smtp: SmtpSettings) -> None:
        self.host, self.port, self.sender, self.timeout = (
            smtp.host,
            smtp.port,
            smtp.sender,
            smtp.timeout_seconds,
        )

    async def send(self, messages: list[tuple[str, str, str]]) -> Sent:
        try:
            async with aiosmtplib.SMTP(hostname=self.host, port=self.port, timeout=self.timeout) as smtp:
                for address, subject, text in messages:
                    await smtp.send_message(self._message(address, subject, text))
        except (aiosmtplib.SMTPException, OSError) as exc:
            return Sent(False, f"SMTP {self.host}:{self.port}: {type(exc).__name__}: {exc}")
        return Sent(True, f"sent to {', '.join(address for address, _, _ in messages)}")

    def _message(self, address: str, subject: str, text: str) -> EmailMessage:
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = address
        message["Subject"] = subject
        message["Date"] = formatdate(localtime=False)
        message["Message-ID"] = make_msgid(domain="overseer")
        message.set_content(text)
        return message


class SignedLinks:
    """:class:`~overseer_gateway.application.ports.LinkSigner` with ``itsdangerous``: the token carries the
    claim, the time it was issued and an HMAC over both."""

    SALT = "overseer.approval-link"

    def __init__(self, secret: str, ttl_seconds: int) -> None:
        self.serializer = URLSafeTimedSerializer(secret, salt=self.SALT)
        self.ttl = ttl_seconds

    def issue(self, claim: LinkClaim) -> str:
        return str(self.serializer.dumps({**claim.as_payload(), "n": secrets.token_urlsafe(6)}))

    def read(self, token: str) -> LinkClaim:
        try:
            payload, issued = self.serializer.loads(token, max_age=self.ttl, return_timestamp=True)
        except SignatureExpired:
            raise BadLink(410, "this approval link has expired: decide in the console instead") from None
        except BadSignature:
            raise BadLink(404, "this is not an approval link Overseer issued, or it was changed") from None
        try:
            return LinkClaim.from_payload(payload, link_id_of(token), issued.timestamp() + self.ttl)
        except (KeyError, TypeError, AttributeError):
            raise BadLink(404, "this is not an approval link Overseer issued, or it was changed") from None


def link_secret(home: Path, configured: str) -> str:
    """The configured key, or ``$OVERSEER_HOME/link.key`` (written with a new random key, 0600, when missing)."""
    if configured:
        return configured
    path = home / "link.key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(32))
    return path.read_text().strip()
