"""ToolCatalog's contract, held by the fake and by the tool registry: declarations by name, and a call."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_executor.adapters.tools.base import StaticToolPlugin
from overseer_executor.adapters.tools.registry import ToolRegistry
from overseer_executor.application.ports import ToolCatalog
from overseer_executor.domain.tools import ToolCall, ToolError, ToolSpec, UnknownTool
from tests.fakes.executor import FakeTools

LIST = ToolSpec("fs.list", description="List a directory.", idempotent=True, level="AUTO")
SEND = ToolSpec("email.send", irreversible=True, level="APPROVE", time_limit_seconds=30)


def registry(answers: dict[str, Any]) -> ToolRegistry:
    plugin = StaticToolPlugin()
    for spec in (LIST, SEND):

        async def run(args: dict[str, Any], call: ToolCall, answer: Any = answers[spec.name]) -> str:
            if isinstance(answer, Exception):
                raise answer
            return str(answer)

        plugin.add(spec, run)
    return ToolRegistry([plugin])


@pytest.fixture(params=["fake", "registry"])
def catalog(request: pytest.FixtureRequest) -> ToolCatalog:
    """``fs.list`` answers ``[]``; ``email.send`` fails (the message is the reason)."""
    answers: dict[str, Any] = {"fs.list": "[]", "email.send": ToolError("SMTP refused")}
    if request.param == "fake":
        return (
            FakeTools([LIST, SEND])
            .answer("fs.list", answers["fs.list"])
            .answer("email.send", answers["email.send"])
        )
    return registry(answers)


def test_a_tool_is_found_by_its_name_with_its_declaration(catalog: ToolCatalog) -> None:
    assert catalog.spec("fs.list") == LIST
    assert catalog.spec("email.send") == SEND


def test_no_name_or_an_unknown_name_finds_nothing(catalog: ToolCatalog) -> None:
    assert catalog.spec(None) is None
    assert catalog.spec("") is None
    assert catalog.spec("fs.delete") is None


async def test_a_call_answers_with_the_tools_text(catalog: ToolCatalog) -> None:
    assert await catalog.execute(ToolCall("fs.list", {"path": "."}, "exec-001")) == "[]"


async def test_a_failing_tool_raises_its_error(catalog: ToolCatalog) -> None:
    with pytest.raises(ToolError, match="SMTP refused"):
        await catalog.execute(ToolCall("email.send", {}, "exec-001"))


async def test_calling_an_unknown_tool_is_refused(catalog: ToolCatalog) -> None:
    with pytest.raises(UnknownTool, match=r"fs\.delete"):
        await catalog.execute(ToolCall("fs.delete", {}, "exec-001"))
