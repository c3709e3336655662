"""A LangGraph agent whose tools run in its own process, each guarded by Overseer.

The graph is LangGraph's usual shape: a model node that decides the next tool call, and a ``ToolNode``
that runs it. The tools are plain Python functions, wrapped by ``overseer.guard``: every call the model
decides goes to Overseer's firewall first, may wait for a person's approval, and runs here only when it is
allowed, with the approved arguments; its outcome is recorded in Overseer like any other execution. A call
that may not run raises, and LangGraph's ``ToolNode`` hands the error back to the model as the tool's
answer.

Run it against a running stack (``overseer up``) with an agent token::

    OVERSEER_URL=http://127.0.0.1:8080 OVERSEER_TOKEN=<agent token> python examples/langgraph_guard/agent.py

The "model" here is a script (LangChain's ``GenericFakeChatModel``) so the example runs offline; put a
real chat model in its place (``ChatOpenAI(...).bind_tools(TOOLS)``) and nothing else changes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from overseer.guard import Guard

NOTES = Path(os.environ.get("NOTES_DIR", "notes"))


def build(guard: Guard, model: Any) -> Any:
    """The agent's graph: ``model`` decides, the guarded tools run."""

    @tool
    @guard.tool(name="notes.read")
    def read_note(name: str) -> str:
        """Read one of the user's notes."""
        return (NOTES / name).read_text()

    @tool
    @guard.tool(name="notes.save", irreversible=True, summary="overwrite one of the user's notes")
    def save_note(name: str, text: str) -> str:
        """Save (overwrite) one of the user's notes."""
        NOTES.mkdir(parents=True, exist_ok=True)
        (NOTES / name).write_text(text)
        return f"saved {len(text)} characters to {name}"

    tools = [read_note, save_note]

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    def decide(state: State) -> dict[str, list[AnyMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(State)
    graph.add_node("model", decide)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    graph.add_edge("model", END)
    return graph.compile()


def scripted_model() -> GenericFakeChatModel:
    """A model that saves a note, then says it did (stands in for a real one)."""
    call = {"name": "save_note", "args": {"name": "plan.md", "text": "ship on Friday"}, "id": "call-1"}
    return GenericFakeChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="Your plan is saved.")])
    )


def main() -> None:
    guard = Guard(os.environ.get("OVERSEER_URL", "http://127.0.0.1:8080"), os.environ["OVERSEER_TOKEN"])
    agent = build(guard, scripted_model())
    final = agent.invoke({"messages": [HumanMessage("save my plan: ship on Friday")]})
    for message in final["messages"]:
        print(f"{message.type}: {message.content}")


if __name__ == "__main__":
    main()
