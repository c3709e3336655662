"""A proposal names a registered tool, or is refused at once with the tools most likely meant."""

from __future__ import annotations

from typing import Any

from overseer_gateway.adapters.known_tools import ExecutorTools
from overseer_gateway.application.queries import unregistered_tool
from overseer_gateway.domain.tools import closest_tools, unknown_tool
from tests.fakes.gateway import InMemoryPeers, InMemoryTools

REGISTERED = frozenset({"fs.list", "fs.read", "fs.write", "email.send", "time.get_current_time"})


def test_a_misspelt_tool_names_the_one_meant_first() -> None:
    assert closest_tools("email.sned", REGISTERED)[0] == "email.send"
    assert closest_tools("fs.lst", REGISTERED)[0] == "fs.list"


def test_a_tool_of_a_known_namespace_names_that_namespaces_tools() -> None:
    assert closest_tools("fs.delete", REGISTERED) == ["fs.list", "fs.read", "fs.write"]


def test_a_name_like_none_lists_every_registered_tool() -> None:
    detail = unknown_tool("weather.forecast", REGISTERED)
    assert detail.startswith("unknown tool 'weather.forecast': the registered tools are ")
    assert all(name in detail for name in REGISTERED)


async def test_a_tool_registered_a_moment_ago_is_accepted_after_asking_again() -> None:
    tools = InMemoryTools(REGISTERED, registered=frozenset({"git.log"}))
    assert await unregistered_tool(tools, "git.log") is None
    assert tools.asked == [False, True]


async def test_an_unregistered_tool_is_refused_only_after_asking_again() -> None:
    tools = InMemoryTools(REGISTERED)
    refused = await unregistered_tool(tools, "email.sned")
    assert refused is not None
    assert refused.closest[0] == "email.send"
    assert tools.asked == [False, True]


async def test_when_the_executor_cannot_say_nothing_is_refused_for_the_firewall_holds_what_it_does_not_know() -> (
    None
):
    assert await unregistered_tool(InMemoryTools(None), "anything.at_all") is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_the_list_is_kept_for_its_ttl_and_asked_afresh_at_most_once_a_second() -> None:
    listed: list[dict[str, Any]] = [{"name": "fs.list"}]
    peers = InMemoryPeers(methods={("executor", "tools.list"): lambda payload: list(listed)})
    clock = Clock()
    tools = ExecutorTools(peers, ttl=30.0, refresh=1.0, clock=clock)
    assert await tools.names() == frozenset({"fs.list"})
    listed.append({"name": "git.log"})
    assert await tools.names() == frozenset({"fs.list"})  # kept
    assert await tools.names(fresh=True) == frozenset({"fs.list"})  # asked less than a second ago
    clock.now += 1.5
    assert await tools.names(fresh=True) == frozenset({"fs.list", "git.log"})
    assert len([a for a in peers.asked if a.method == "tools.list"]) == 2


async def test_an_executor_that_does_not_answer_leaves_the_last_list() -> None:
    peers = InMemoryPeers(methods={("executor", "tools.list"): lambda payload: [{"name": "fs.list"}]})
    clock = Clock()
    tools = ExecutorTools(peers, ttl=30.0, clock=clock)
    assert await tools.names() == frozenset({"fs.list"})
    del peers.methods[("executor", "tools.list")]
    clock.now += 60
    assert await tools.names() == frozenset({"fs.list"})
    assert await ExecutorTools(InMemoryPeers(), ttl=30.0).names() is None
