"""Telling approval channels about held calls: each due delivery is sent, and each attempt recorded.

The notice book (a read model of the requests, escalations and routes) says which deliveries are
due; :class:`NoticeSender` sends each one through its channel and records the attempt as
``notice.delivery_attempted``, which also says when the next attempt is due after a failure.
A delivery is sent at least once: a crash between sending and recording sends it again after the
restart (webhook receivers tell a repeat by its ``Overseer-Delivery`` header).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import orjson

from overseer_events.catalogue import NoticeDeliveryAttempted
from overseer_gateway.application.commands import link_approver
from overseer_gateway.application.ports import (
    Callers,
    GatewayUnit,
    LinkSigner,
    Mailer,
    NoticeBook,
    Sent,
    Transactions,
    Webhooks,
)
from overseer_gateway.domain.notices import (
    SIGNATURE_HEADER,
    Card,
    Delivery,
    LinkClaim,
    Links,
    card_body,
    decisions_of,
    mail_text,
    retry_delay,
    signature,
    slack_body,
)
from overseer_gateway.settings import ChannelKind, ChannelsSettings, EmailChannel, WebhookChannel

log = logging.getLogger("overseer.gateway.notices")


@dataclass(frozen=True, slots=True)
class Attempt:
    delivery: Delivery
    number: int
    channel_kind: ChannelKind
    sent: Sent
    retry_in: float | None


def record_attempt(unit: GatewayUnit, attempt: Attempt) -> None:
    """``notice.delivery_attempted``: one per attempt (aggregate ``notice:<delivery id>``, version = attempt)."""
    delivery = attempt.delivery
    unit.emit_as("gateway:notices")(
        NoticeDeliveryAttempted(
            delivery_id=delivery.delivery_id,
            execution_id=delivery.execution_id,
            notice=delivery.notice,
            channel=delivery.channel,
            channel_kind=attempt.channel_kind,
            attempt=attempt.number,
            outcome="delivered" if attempt.sent.ok else "failed",
            detail=attempt.sent.detail[:500],
            status_code=attempt.sent.status_code,
            retry_in=attempt.retry_in,
        ),
        aggregate_id=f"notice:{delivery.delivery_id}",
        aggregate_version=attempt.number,
        correlation_id=delivery.card.session_id,
    )


class NoticeSender:
    """Sends the due deliveries, each at most once at a time, and records every attempt."""

    def __init__(
        self,
        settings: ChannelsSettings,
        *,
        book: Callable[[], NoticeBook],
        transactions: Transactions,
        webhooks: Webhooks,
        mailer: Mailer,
        links: LinkSigner,
        callers: Callers,
        public_url: str,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.book = book
        self.transactions = transactions
        self.webhooks = webhooks
        self.mailer = mailer
        self.links = links
        self.callers = callers
        self.public_url = public_url.rstrip("/")
        self.clock = clock
        self.wake = asyncio.Event()
        self._sending: dict[str, asyncio.Task[None]] = {}

    @property
    def console_url(self) -> str:
        return f"{self.public_url}/#/approvals"

    async def run(self) -> None:
        """Forever: send what is due, then sleep until woken (a new notice) or ``poll_seconds``."""
        while True:
            self.send_due()
            # No await since send_due read the book, so no commit (and no wake) can have come between:
            # clearing here loses nothing a later commit's wake would say.
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), self.settings.poll_seconds)
            except TimeoutError:
                pass

    def send_due(self) -> None:
        """Start sending every due delivery not already being sent."""
        for delivery in self.book().due(self.clock()):
            if delivery.delivery_id not in self._sending:
                task = asyncio.get_running_loop().create_task(self._attempt(delivery))
                self._sending[delivery.delivery_id] = task
                task.add_done_callback(partial(self._sent, delivery.delivery_id))

    def _sent(self, delivery_id: str, _: asyncio.Task[None]) -> None:
        self._sending.pop(delivery_id, None)

    async def idle(self) -> None:
        """Until no delivery is being sent (a graceful stop lets attempts in flight finish)."""
        while self._sending:
            await asyncio.gather(*self._sending.values(), return_exceptions=True)

    async def _attempt(self, delivery: Delivery) -> None:
        number = delivery.attempts + 1
        kind = self.settings.kind_of(delivery.channel)
        try:
            sent = await self._send(delivery, kind)
        except Exception as exc:  # a notice never stops the sender: it is recorded as failed
            log.exception("notice %s failed", delivery.delivery_id)
            sent = Sent(False, f"{type(exc).__name__}: {exc}")
        retry_in = None
        if not sent.ok and sent.retry and number < self.settings.attempts:
            retry_in = retry_delay(
                number, base=self.settings.retry_base_seconds, cap=self.settings.retry_max_seconds
            )
        attempt = Attempt(delivery, number, kind, sent, retry_in)
        await self.transactions.execute(lambda unit: record_attempt(unit, attempt))

    async def _send(self, delivery: Delivery, kind: ChannelKind) -> Sent:
        match kind:
            case "webhook":
                return await self._post(delivery, self.settings.webhook[delivery.channel])
            case "email":
                return await self._mail(delivery, self.settings.email[delivery.channel])
            case _:
                detail = f"no channel named {delivery.channel!r} in the [channels] configuration"
                return Sent(False, detail, retry=False)

    async def _post(self, delivery: Delivery, hook: WebhookChannel) -> Sent:
        """The card as JSON (or a Slack message), signed, with the delivery's id and attempt."""
        card, notice = delivery.card, delivery.notice
        links = self.links_for(card, delivery.channel, hook.approver)
        if hook.format == "slack":
            body = slack_body(card, notice, links, self.console_url)
        else:
            body = card_body(card, notice, delivery.delivery_id, links, self.console_url)
        raw = orjson.dumps(body)
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(hook.secret, int(self.clock()), raw),
            "Overseer-Delivery": delivery.delivery_id,
            "Overseer-Attempt": str(delivery.attempts + 1),
        }
        return await self.webhooks.post(hook.url, raw, headers)

    async def _mail(self, delivery: Delivery, mail: EmailChannel) -> Sent:
        """One mail per recipient, each with links that act as that recipient."""
        messages = []
        for approver, address in mail.to.items():
            links = self.links_for(delivery.card, delivery.channel, approver)
            subject, text = mail_text(delivery.card, delivery.notice, links, self.console_url)
            messages.append((address, subject, text))
        return await self.mailer.send(messages)

    def links_for(self, card: Card, channel: str, approver: str | None) -> Links:
        """One link per decision the card takes, acting as ``approver`` (none when it may not decide)."""
        if approver is None:
            return Links()
        if link_approver(self.callers, approver) is None:
            log.warning(
                "channel %s: %r is no principal that may decide approvals; no links", channel, approver
            )
            return Links()
        by_decision = {}
        for decision in decisions_of(card):
            claim = LinkClaim(card.execution_id, card.args_hash, decision, approver, channel, card.kind)
            by_decision[decision] = f"{self.public_url}/#/link/{self.links.issue(claim)}"
        return Links(by_decision)
