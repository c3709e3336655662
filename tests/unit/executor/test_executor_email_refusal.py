"""Why ``email.send`` refuses a call before any connection: the first problem found, field by field."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_executor.adapters.tools.email import refusal

SENDER = "overseer@localhost"
GOOD = {"to": "bob@example.com", "subject": "Hi", "body": "Tomorrow?"}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"to": None}, "to: an address or a non-empty list of addresses is required"),
        ({"to": []}, "to: an address or a non-empty list of addresses is required"),
        ({"to": 7}, "to: an address or a non-empty list of addresses is required"),
        ({"cc": []}, "cc: an address or a non-empty list of addresses is required"),
        ({"cc": ["carol@example.com", "not an address"]}, "cc: 'not an address' is not"),
        ({"reply_to": "r@x\n"}, "reply_to: 'r@x\\n' contains control characters (\\n)"),
        ({"subject": None}, "subject: None is not a string"),
        ({"body": b"bytes"}, "body: a string is required"),
    ],
    ids=["no to", "empty to", "to not text", "empty cc", "bad cc", "reply_to LF", "no subject", "body bytes"],
)
def test_a_malformed_field_is_the_reason_named_with_it(change: dict[str, Any], reason: str) -> None:
    found = refusal({**GOOD, **change}, SENDER)
    assert found is not None
    assert found.startswith(reason)


def test_the_first_problem_in_field_order_is_the_one_given() -> None:
    assert refusal({"to": [], "cc": [], "subject": None}, "bad sender") == (
        "to: an address or a non-empty list of addresses is required"
    )
    found = refusal({**GOOD, "body": None}, "bad sender")
    assert found == "body: a string is required"


def test_a_well_formed_call_with_a_bad_configured_sender_is_refused_for_the_sender() -> None:
    found = refusal(GOOD, "overseer@localhost\r\nBcc: eve@evil.test")
    assert found is not None
    assert found.startswith("the configured sender (tools.email.sender): ")


def test_a_well_formed_call_is_not_refused() -> None:
    assert refusal({**GOOD, "cc": ["carol@example.com"], "reply_to": "r@example.com"}, SENDER) is None
    assert refusal({**GOOD, "cc": None, "reply_to": None}, SENDER) is None
