"""Queries answered by asking the owning service, waiting on events rather than polling."""

from __future__ import annotations

import asyncio
from typing import Any

from overseer.events.runtime import RpcError
from overseer.gateway.adapters.peers import Peers
from overseer.gateway.adapters.waiters import ExecutionWaiters
from overseer.gateway.domain.outcomes import is_settled


async def consequence_when_settled(
    peers: Peers, waiters: ExecutionWaiters, execution_id: str, *, wait: float, until_terminal: bool
) -> dict[str, Any] | None:
    """The observer's consequence view as soon as it settles, else as it is after ``wait`` seconds.

    None when the observer does not know the execution by then.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    view: dict[str, Any] | None = None
    # Watch before the first read: a transition landing between the read and the
    # registration would otherwise go unnoticed until the deadline.
    with waiters.watch(execution_id, until_terminal=until_terminal) as woken:
        while True:
            woken.clear()
            try:
                view = await peers.ask("observer", "consequence", {"execution_id": execution_id})
            except RpcError as exc:
                if exc.status != 404:
                    raise
                view = None
            remaining = deadline - loop.time()
            if (view is not None and is_settled(view, until_terminal)) or remaining <= 0 or waiters.closed:
                return view
            try:
                await asyncio.wait_for(woken.wait(), remaining)
            except TimeoutError:
                pass  # one last read, then the view as it is
