"""Approval channels against a whole stack: a held call reaches a webhook (signed, retried after two
failures) and a mail list (over real SMTP), and the mail's link decides it after one confirming click.

The webhook receiver is a real HTTP server on a free port that answers 500 twice, then 200, and
checks every signature; the mail goes to the same SMTP sink ``email.send`` uses. A stack of its own:
the gateway's ``[channels]`` and the admin policy's ``[[notify]]`` routes are set for these tests.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from itsdangerous import TimestampSigner, URLSafeTimedSerializer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from overseer_executor.adapters.smtp_sink import SmtpSink
from overseer_gateway.adapters.channels import SignedLinks
from overseer_gateway.bootstrap import GatewayService
from overseer_gateway.domain.notices import SIGNATURE_HEADER, LinkClaim, signature, signature_valid
from overseer_runtime.testing import NatsUnderTest, Stack, eventually
from tests.e2e.e2e_support import FullStack
from tests.support.asgi_server import serving
from tests.support.services import running

pytestmark = pytest.mark.slow

SECRET = "webhook-secret-for-the-tests"
MAIL = {"to": "bob@example.com", "subject": "Quarterly numbers", "body": "Attached are the numbers."}


@dataclass
class Receiver:
    """A webhook endpoint: answers 500 to the first ``failures`` POSTs of each delivery, then 200."""

    failures: int = 2
    received: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    async def hook(self, request: Request) -> JSONResponse:
        body = await request.body()
        delivery = request.headers.get("Overseer-Delivery", "")
        seen = sum(1 for r in self.received if r["delivery"] == delivery)
        self.received.append(
            {
                "delivery": delivery,
                "attempt": request.headers.get("Overseer-Attempt"),
                "signed": signature_valid(
                    SECRET, request.headers.get(SIGNATURE_HEADER, ""), body, now=time.time()
                ),
                "body": json.loads(body),
                "at": time.time(),
            }
        )
        if seen < self.failures:
            return JSONResponse({"error": "try again"}, status_code=500)
        return JSONResponse({"ok": True})

    def of(self, execution_id: str) -> list[dict[str, Any]]:
        return [r for r in self.received if r["body"].get("execution_id") == execution_id]


@pytest.fixture(scope="module")
async def receiver() -> AsyncIterator[Receiver]:
    hooks = Receiver()
    async with serving(Starlette(routes=[Route("/hook", hooks.hook, methods=["POST"])])) as url:
        hooks.url = f"{url}/hook"
        yield hooks


@pytest.fixture(scope="module")
async def channel_stack(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsUnderTest, receiver: Receiver
) -> AsyncIterator[FullStack]:
    stack = Stack(home=tmp_path_factory.mktemp("channels") / "home", nats=nats_server)
    sink = SmtpSink(stack.home / "mail", port=0)
    await sink.start()
    channels = {
        "retry_base_seconds": 0.05,
        "retry_max_seconds": 0.2,
        "poll_seconds": 0.05,
        "smtp": {
            "host": "127.0.0.1",
            "port": sink.port,
            "sender": "overseer@localhost",
            "timeout_seconds": 5,
        },
        "webhook": {
            "ops": {"url": receiver.url, "secret": SECRET, "format": "overseer", "approver": "operator"}
        },
        "email": {"approvers": {"to": {"operator": "ops@example.com"}}},
    }
    try:
        tools = {"email": {"host": "127.0.0.1", "port": sink.port}}
        async with running(stack, gateway={"port": 0}, tools=tools, channels=channels) as services:
            tokens = json.loads((stack.home / "tokens.json").read_text())
            gateway = services["gateway"]
            assert isinstance(gateway, GatewayService)
            full = FullStack(gateway.url, tokens, stack, services, sink)
            await route_notices(full)
            yield full
    finally:
        await sink.stop()


async def route_notices(stack: FullStack) -> None:
    """The admin policy's routes: held mail calls to the webhook and the mail list, escalations to the
    mail list; APPROVE calls escalated after 2 s (decided only after an hour)."""
    async with stack.client("admin") as admin:
        policy = (await admin.get("/v1/policy")).json()
        document = {k: v for k, v in policy["admin"].items() if k != "version"}
        timeouts = {**document.get("timeouts", {})}
        timeouts["APPROVE"] = {**timeouts.get("APPROVE", {}), "escalate_after_seconds": 2.0}
        timeouts["APPROVE"]["decide_after_seconds"] = 3600.0
        document["timeouts"] = timeouts
        document["notify"] = [
            {"channel": "ops", "tools": ["email.*"], "sessions": ["hooked-*"]},
            {"channel": "approvers", "levels": ["APPROVE"], "on": ["held", "escalated"]},
        ]
        replaced = await admin.put("/v1/policy/admin", json=document)
        assert replaced.status_code == 200, replaced.text


async def held_mail(stack: FullStack, session_id: str) -> str:
    async with stack.client("agent") as agent:
        # Each its own subject: an irreversible call with the same arguments as an earlier one is a duplicate.
        args = {**MAIL, "subject": f"{MAIL['subject']} ({session_id})"}
        proposed = await agent.post(
            "/v1/actions", json={"session_id": session_id, "tool": "email.send", "args": args}
        )
        assert proposed.status_code == 202, proposed.text
        return str(proposed.json()["execution_id"])


def mails_about(sink: SmtpSink, execution_id: str) -> list[email.message.EmailMessage]:
    found = []
    for path in sink.messages():
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        assert isinstance(message, email.message.EmailMessage)
        if execution_id in message.get_content():
            found.append(message)
    return found


def links_in(message: email.message.EmailMessage) -> dict[str, str]:
    """The mail's approval links, by the label in front of each."""
    return dict(
        re.findall(r"^ +([A-Za-z ]+): (http\S+/#/link/[A-Za-z0-9_.\-]+)", message.get_content(), re.M)
    )


def token_of(link: str) -> str:
    return link.rsplit("/#/link/", 1)[1]


async def state_of(stack: FullStack, execution_id: str) -> str:
    async with stack.client("viewer") as viewer:
        answer = await viewer.get(f"/v1/actions/{execution_id}")
        return str(answer.json()["consequence_label"])


async def test_a_held_call_reaches_the_webhook_signed_and_retried_until_it_is_taken(
    channel_stack: FullStack, receiver: Receiver
) -> None:
    execution_id = await held_mail(channel_stack, "hooked-1")
    await eventually(lambda: len(receiver.of(execution_id)) >= 3, timeout=20)
    attempts = receiver.of(execution_id)
    assert [a["attempt"] for a in attempts] == ["1", "2", "3"]
    assert all(a["signed"] for a in attempts)
    assert len({a["delivery"] for a in attempts}) == 1  # one notice, tried three times
    card = attempts[-1]["body"]
    assert card["type"] == "approval.held"
    assert (card["tool"], card["level"], card["args"]["to"]) == ("email.send", "APPROVE", MAIL["to"])
    assert "bob@example.com" in card["preview_text"]
    assert set(card["links"]) == {"approve", "reject"}

    async def recorded() -> list[dict[str, Any]]:
        async with channel_stack.client("operator") as operator:
            return list((await operator.get(f"/v1/approvals/{execution_id}/notices")).json())

    async def delivered() -> dict[str, Any] | None:
        return next(
            (n for n in await recorded() if n["channel"] == "ops" and n["state"] == "delivered"), None
        )

    ops = await eventually(delivered, timeout=10)
    assert (ops["attempts"], ops["notice"]) == (3, "held")


async def test_a_webhook_signature_made_with_another_secret_or_too_old_does_not_verify() -> None:
    body = b'{"execution_id": "e1"}'
    now = time.time()
    assert signature_valid(SECRET, signature(SECRET, int(now), body), body, now=now)
    assert not signature_valid(SECRET, signature("another-secret-entirely", int(now), body), body, now=now)
    assert not signature_valid(SECRET, signature(SECRET, int(now) - 3600, body), body, now=now)
    assert not signature_valid(SECRET, signature(SECRET, int(now), body), body + b" ", now=now)


async def test_the_mail_link_decides_after_one_confirming_click_and_only_once(
    channel_stack: FullStack,
) -> None:
    execution_id = await held_mail(channel_stack, "mailed-1")
    try:
        await eventually(lambda: bool(mails_about(channel_stack.sink, execution_id)), timeout=10)
    except TimeoutError:
        async with channel_stack.client("operator") as operator:
            print((await operator.get(f"/v1/approvals/{execution_id}/notices")).json())
        print(channel_stack.sink.messages())
        raise
    mail = mails_about(channel_stack.sink, execution_id)[0]
    assert mail["To"] == "ops@example.com"
    assert "email.send" in mail["Subject"]
    text = mail.get_content()
    assert "bob@example.com" in text
    assert "args_hash" in text
    links = links_in(mail)
    assert set(links) == {"Approve", "Reject"}
    token = token_of(links["Approve"])

    async with httpx.AsyncClient(base_url=channel_stack.url, timeout=30) as anyone:
        # A mail scanner or a link preview fetches the page and the link's view: nothing is decided.
        page = await anyone.get(links["Approve"].split("#", 1)[0])
        assert page.status_code == 200
        shown = await anyone.get(f"/v1/links/{token}")
        assert shown.status_code == 200, shown.text
        view = shown.json()
        assert (view["decision"], view["approver"], view["state"]) == ("approve", "operator", "open")
        assert view["card"]["tool"] == "email.send"
        await asyncio.sleep(0.5)
        assert await state_of(channel_stack, execution_id) == "WAITING"

        # The confirming click decides, as the link's approver, through the link.
        clicked = await anyone.post(f"/v1/links/{token}", json={})
        assert clicked.status_code == 200, clicked.text
        assert clicked.json()["decided_by"] == {"kind": "operator", "id": "operator"}
        assert clicked.json()["via"] == "link:approvers"

        # Used once: a second click, and the other link of the same mail, change nothing.
        again = await anyone.post(f"/v1/links/{token}", json={})
        assert again.status_code == 409, again.text
        reject = await anyone.post(f"/v1/links/{token_of(links['Reject'])}", json={})
        assert reject.status_code == 409, reject.text
        assert (await anyone.get(f"/v1/links/{token}")).json()["state"] == "used"

    async with channel_stack.client("viewer") as viewer:
        done = await viewer.get(f"/v1/actions/{execution_id}", params={"wait": 20, "until": "terminal"})
        assert done.json()["consequence_label"] == "SUCCESS", done.text


async def test_an_edited_expired_or_mismatched_link_is_refused_and_decides_nothing(
    channel_stack: FullStack,
) -> None:
    execution_id = await held_mail(channel_stack, "mailed-2")
    await eventually(lambda: bool(mails_about(channel_stack.sink, execution_id)), timeout=10)
    token = token_of(links_in(mails_about(channel_stack.sink, execution_id)[0])["Approve"])
    secret = (channel_stack.home / "link.key").read_text().strip()
    issuer = SignedLinks(secret, 3600)
    args_hash = issuer.read(token).args_hash

    class LongAgo(TimestampSigner):
        def get_timestamp(self) -> int:
            return int(time.time()) - 10 * 86400

    old = URLSafeTimedSerializer(secret, salt=SignedLinks.SALT, signer=LongAgo)
    expired = old.dumps(LinkClaim(execution_id, args_hash, "approve", "operator", "approvers").as_payload())
    edited = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    other_args = issuer.issue(LinkClaim(execution_id, "0" * 64, "approve", "operator", "approvers"))
    as_agent = issuer.issue(LinkClaim(execution_id, args_hash, "approve", "agent", "approvers"))

    async with httpx.AsyncClient(base_url=channel_stack.url, timeout=30) as anyone:
        for bad, status in ((edited, 404), (expired, 410), (other_args, 409), (as_agent, 403)):
            answer = await anyone.post(f"/v1/links/{bad}", json={})
            assert answer.status_code == status, (status, answer.text)
            assert answer.headers["content-type"].startswith("application/problem+json")
            assert answer.json()["detail"]
    assert await state_of(channel_stack, execution_id) == "WAITING"


async def test_an_unanswered_call_is_escalated_to_the_mail_list(channel_stack: FullStack) -> None:
    execution_id = await held_mail(channel_stack, "escalated-1")

    def escalation() -> list[email.message.EmailMessage]:
        return [m for m in mails_about(channel_stack.sink, execution_id) if "Escalated" in m["Subject"]]

    await eventually(lambda: bool(escalation()), timeout=20)
    assert links_in(escalation()[0])
