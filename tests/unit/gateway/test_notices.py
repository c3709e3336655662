"""Approval notices: routes, the bodies a channel receives, signatures, links, and the sender's attempts
(on fakes of its ports: a scripted webhook, a mailer that records, the in-memory links and book)."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from pydantic import ValidationError

from overseer_events.catalogue import NoticeDeliveryAttempted, Principal
from overseer_events.notices import NoticeRoute, channels_for, parse_routes
from overseer_gateway.adapters.channels import SignedLinks
from overseer_gateway.application.notices import NoticeSender
from overseer_gateway.application.ports import BadLink, Sent
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.notices import (
    Card,
    Delivery,
    LinkClaim,
    Links,
    card_body,
    decisions_of,
    delivery_id,
    mail_text,
    retry_delay,
    signature,
    signature_valid,
    slack_body,
)
from overseer_gateway.settings import ChannelsSettings
from tests.fakes.gateway import FakeGateway, InMemoryCallers, InMemoryLinks, InMemoryNoticeBook

CARD = Card(
    execution_id="e1",
    session_id="s1",
    kind="approval",
    tool="email.send",
    level="APPROVE",
    args={"to": "bob@example.com", "subject": "Hi", "body": "Hello"},
    args_hash="h" * 64,
    preview={"kind": "email", "rendered": "To: bob@example.com\nSubject: Hi\n\nHello"},
    message=None,
    requested_by=Principal(kind="agent", id="agent"),
    requested_at=1.0,
)


# -- routes -------------------------------------------------------------------------------------
def test_a_route_takes_what_its_lists_name_and_an_empty_list_takes_anything() -> None:
    routes = parse_routes(
        [
            {"channel": "ops", "tools": ["email.*"], "levels": ["approve"]},
            {"channel": "admins", "on": "escalated"},
            {"channel": "night", "sessions": ["batch-*"]},
        ]
    )
    assert channels_for(routes, "held", level="APPROVE", tool="email.send", session_id="s1") == ["ops"]
    assert channels_for(routes, "held", level="CONFIRM", tool="email.send", session_id="s1") == []
    assert channels_for(routes, "escalated", level="CONFIRM", tool="fs.write", session_id="s1") == ["admins"]
    assert channels_for(routes, "held", level="CONFIRM", tool="fs.write", session_id="batch-7") == ["night"]


def test_a_channel_named_by_two_matching_routes_is_told_once() -> None:
    routes = parse_routes([{"channel": "ops"}, {"channel": "ops", "tools": ["email.*"]}])
    assert channels_for(routes, "held", level="APPROVE", tool="email.send", session_id="s1") == ["ops"]


@pytest.mark.parametrize(
    "entry",
    [
        {},
        {"channel": ""},
        {"channel": "ops", "levels": ["SOMETIMES"]},
        {"channel": "ops", "on": ["held", "later"]},
        {"channel": "ops", "color": "red"},
    ],
)
def test_a_route_that_names_no_channel_an_unknown_level_notice_or_key_is_refused(
    entry: dict[str, Any],
) -> None:
    with pytest.raises(ValidationError):
        NoticeRoute.model_validate(entry)


# -- bodies ---------------------------------------------------------------------------------------
LINKS = Links({"approve": "http://gw/#/link/A", "reject": "http://gw/#/link/R"})


def test_the_webhook_card_carries_the_call_its_preview_hash_and_links() -> None:
    body = card_body(CARD, "held", delivery_id(CARD, "held", "ops"), LINKS, "http://gw/#/approvals")
    assert body["type"] == "approval.held"
    assert body["delivery_id"] == "e1:approval:held:ops"
    assert (body["tool"], body["args"], body["args_hash"]) == ("email.send", CARD.args, CARD.args_hash)
    assert "Subject: Hi" in body["preview_text"]
    assert body["links"] == {"approve": "http://gw/#/link/A", "reject": "http://gw/#/link/R"}


def test_the_slack_message_shows_tool_preview_and_hash_and_offers_the_links_as_buttons() -> None:
    body = slack_body(CARD, "held", LINKS, "http://gw/#/approvals")
    text = orjson.dumps(body).decode()
    assert body["text"].startswith("Approval needed: email.send")
    assert "Subject: Hi" in text
    assert CARD.args_hash in text
    actions = next(block for block in body["blocks"] if block["type"] == "actions")
    assert [button["url"] for button in actions["elements"]] == [
        "http://gw/#/link/A",
        "http://gw/#/link/R",
        "http://gw/#/approvals",
    ]


def test_the_mail_reads_as_the_card_with_the_rendered_preview_the_hash_and_one_link_per_decision() -> None:
    subject, text = mail_text(CARD, "escalated", LINKS, "http://gw/#/approvals")
    assert subject.startswith("[Overseer] Escalated")
    assert "    Subject: Hi" in text
    assert f"args_hash {CARD.args_hash}" in text
    assert "  Approve: http://gw/#/link/A" in text
    assert "  Reject: http://gw/#/link/R" in text


def test_a_reconciliation_card_offers_completed_and_failed() -> None:
    reconciliation = CARD.model_copy(update={"kind": "reconciliation"})
    assert decisions_of(reconciliation) == ("completed", "failed")
    assert decisions_of(CARD) == ("approve", "reject")


def test_retries_wait_twice_as_long_each_time_up_to_the_cap() -> None:
    assert [retry_delay(n, base=0.5, cap=3.0) for n in (1, 2, 3, 4, 5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


# -- signatures and links -------------------------------------------------------------------------
def test_a_signature_verifies_only_with_its_secret_its_body_and_while_fresh() -> None:
    now = time.time()
    header = signature("s" * 32, int(now), b"{}")
    assert signature_valid("s" * 32, header, b"{}", now=now)
    assert not signature_valid("t" * 32, header, b"{}", now=now)
    assert not signature_valid("s" * 32, header, b"{} ", now=now)
    assert not signature_valid("s" * 32, header, b"{}", now=now + 301)
    assert not signature_valid("s" * 32, "v1=abc", b"{}", now=now)


def test_a_signed_link_reads_back_as_its_claim_and_an_edited_or_foreign_one_does_not() -> None:
    links = SignedLinks("k" * 32, 3600)
    claim = LinkClaim("e1", "h1", "approve", "alice", "ops")
    token = links.issue(claim)
    read = links.read(token)
    assert (read.execution_id, read.args_hash, read.decision, read.approver, read.channel) == (
        "e1",
        "h1",
        "approve",
        "alice",
        "ops",
    )
    assert read.expires_at > time.time() + 3500
    assert links.issue(claim) != token  # each link its own id
    with pytest.raises(BadLink) as edited:
        links.read(token[:-2] + ("xx" if not token.endswith("xx") else "yy"))
    assert edited.value.status == 404
    with pytest.raises(BadLink):
        SignedLinks("j" * 32, 3600).read(token)


class Yesterday(TimestampSigner):
    def get_timestamp(self) -> int:
        return int(time.time()) - 86400


def test_a_link_older_than_its_time_to_live_has_expired() -> None:
    aged = URLSafeTimedSerializer("k" * 32, salt=SignedLinks.SALT, signer=Yesterday)
    token = str(aged.dumps(LinkClaim("e1", "h1", "approve", "a", "c").as_payload()))
    assert SignedLinks("k" * 32, 2 * 86400).read(token).execution_id == "e1"
    with pytest.raises(BadLink) as expired:
        SignedLinks("k" * 32, 3600).read(token)
    assert expired.value.status == 410


# -- the sender -----------------------------------------------------------------------------------
class ScriptedWebhooks:
    def __init__(self, *answers: Sent) -> None:
        self.answers = list(answers)
        self.posts: list[tuple[str, bytes, dict[str, str]]] = []

    async def post(self, url: str, body: bytes, headers: dict[str, str]) -> Sent:
        self.posts.append((url, body, headers))
        return self.answers.pop(0)


class RecordingMailer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    async def send(self, messages: list[tuple[str, str, str]]) -> Sent:
        self.sent += messages
        return Sent(True, "sent")


def channels(**overrides: Any) -> ChannelsSettings:
    values: dict[str, Any] = {
        "public_url": "http://gw",
        "link_ttl_seconds": 3600,
        "link_secret": "",
        "attempts": 3,
        "retry_base_seconds": 1.0,
        "retry_max_seconds": 10.0,
        "timeout_seconds": 1.0,
        "poll_seconds": 1.0,
        "smtp": {"host": "127.0.0.1", "port": 25, "sender": "o@x", "timeout_seconds": 1},
        "webhook": {"ops": {"url": "http://hooks/x", "secret": "s" * 32, "approver": "olga"}},
        "email": {"admins": {"to": {"olga": "olga@example.com", "adam": "adam@example.com"}}},
    }
    return ChannelsSettings.model_validate(values | overrides)


def sender(
    gateway: FakeGateway, webhooks: ScriptedWebhooks, mailer: RecordingMailer, book: InMemoryNoticeBook
) -> NoticeSender:
    return NoticeSender(
        channels(),
        book=lambda: book,
        transactions=gateway,
        webhooks=webhooks,
        mailer=mailer,
        links=gateway.links,
        callers=gateway.tokens,
        public_url="http://gw",
        clock=lambda: 1000.0,
    )


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway(
        tokens=InMemoryCallers(
            {
                "t1": Caller("olga", Role.OPERATOR),
                "t2": Caller("adam", Role.ADMIN),
                "t3": Caller("vic", Role.VIEWER),
            }
        ),
        links=InMemoryLinks(),
    )


def attempts(gateway: FakeGateway) -> list[NoticeDeliveryAttempted]:
    return [e.data for e in gateway.store.events if isinstance(e.data, NoticeDeliveryAttempted)]


async def test_a_failed_webhook_attempt_is_recorded_with_when_the_next_is_due_and_the_last_without(
    gateway: FakeGateway,
) -> None:
    hooks = ScriptedWebhooks(
        Sent(False, "500 oops", 500), Sent(False, "503 busy", 503), Sent(False, "500", 500)
    )
    book = InMemoryNoticeBook()
    send = sender(gateway, hooks, RecordingMailer(), book)
    for number in range(3):
        book.deliveries = [Delivery("e1:approval:held:ops", "e1", "held", "ops", number, CARD)]
        send.send_due()
        await send.idle()
    recorded = attempts(gateway)
    assert [(a.attempt, a.outcome, a.retry_in) for a in recorded] == [
        (1, "failed", 1.0),
        (2, "failed", 2.0),
        (3, "failed", None),
    ]
    assert recorded[0].status_code == 500
    url, body, headers = hooks.posts[0]
    assert url == "http://hooks/x"
    assert signature_valid("s" * 32, headers["Overseer-Signature"], body, now=1000.0)
    assert orjson.loads(body)["links"].keys() == {"approve", "reject"}


async def test_a_client_error_is_not_retried(gateway: FakeGateway) -> None:
    book = InMemoryNoticeBook()
    book.deliveries = [Delivery("d", "e1", "held", "ops", 0, CARD)]
    send = sender(
        gateway, ScriptedWebhooks(Sent(False, "410 gone", 410, retry=False)), RecordingMailer(), book
    )
    send.send_due()
    await send.idle()
    assert [(a.outcome, a.retry_in) for a in attempts(gateway)] == [("failed", None)]


async def test_a_mail_list_gets_one_mail_per_recipient_each_with_links_acting_as_them(
    gateway: FakeGateway,
) -> None:
    book = InMemoryNoticeBook()
    book.deliveries = [Delivery("d", "e1", "held", "admins", 0, CARD)]
    mailer = RecordingMailer()
    send = sender(gateway, ScriptedWebhooks(), mailer, book)
    send.send_due()
    await send.idle()
    assert [address for address, _, _ in mailer.sent] == ["olga@example.com", "adam@example.com"]
    approvers = {claim.approver for claim in gateway.links.claims.values()}
    assert approvers == {"olga", "adam"}
    assert [(a.outcome, a.channel_kind) for a in attempts(gateway)] == [("delivered", "email")]


async def test_a_notice_to_a_channel_nobody_configured_fails_once_and_says_so(gateway: FakeGateway) -> None:
    book = InMemoryNoticeBook()
    book.deliveries = [Delivery("d", "e1", "held", "pagers", 0, CARD)]
    send = sender(gateway, ScriptedWebhooks(), RecordingMailer(), book)
    send.send_due()
    await send.idle()
    (only,) = attempts(gateway)
    assert (only.outcome, only.retry_in, only.channel_kind) == ("failed", None, "unknown")
    assert "pagers" in only.detail


def test_links_act_only_as_a_principal_that_may_decide(gateway: FakeGateway) -> None:
    send = sender(gateway, ScriptedWebhooks(), RecordingMailer(), InMemoryNoticeBook())
    assert set(send.links_for(CARD, "ops", "olga").by_decision) == {"approve", "reject"}
    assert send.links_for(CARD, "ops", "vic").by_decision == {}  # a viewer
    assert send.links_for(CARD, "ops", "nobody").by_decision == {}
    assert send.links_for(CARD, "ops", None).by_decision == {}


def test_a_channel_name_names_one_channel() -> None:
    with pytest.raises(ValidationError):
        channels(
            webhook={"ops": {"url": "http://x", "secret": "s" * 32}}, email={"ops": {"to": {"a": "a@x"}}}
        )
