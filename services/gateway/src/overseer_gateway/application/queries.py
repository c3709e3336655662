"""Queries answered by asking the owning service, waiting on events rather than polling."""

from __future__ import annotations

from typing import Any

from overseer_gateway.adapters.peers import Peers
from overseer_runtime.runtime import RpcError


async def consequence_when_settled(
    peers: Peers, execution_id: str, *, wait: float, until_terminal: bool
) -> dict[str, Any] | None:
    """The observer's consequence view as soon as it settles, else as it is after ``wait`` seconds.

    The observer does the waiting: it answers right after the commit that settles the
    execution in its read model, one hop sooner than any announcement could reach us.
    None when the observer does not know the execution by then.
    """
    payload = {
        "execution_id": execution_id,
        "wait": wait,
        "until": "terminal" if until_terminal else "settled",
    }
    try:
        view: dict[str, Any] = await peers.ask("observer", "consequence", payload, timeout=wait + 5.0)
    except RpcError as exc:
        if exc.status != 404:
            raise
        return None
    return view
