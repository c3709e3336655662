"""The executor's question that waits: how an execution stands, once it got as far as the caller waits for.

The executor commits every move of a contract, so it can answer the moment one commits, before any
other service has even received the event.
"""

from __future__ import annotations

import time

from overseer_events.views import ExecutionConsequenceView, Until, has_reached
from overseer_executor.application.ports import ExecutorQueries
from overseer_runtime.unit_of_work import WaitForChange


async def settled_consequence(
    queries: ExecutorQueries, wait_for_change: WaitForChange, execution_id: str, wait: float, until: Until
) -> ExecutionConsequenceView | None:
    """The consequence view once the execution reaches ``until``, else as it is after ``wait`` seconds.

    ``until`` (:func:`~overseer_events.views.has_reached`): terminal; or also
    WAITING for a person (``settled``); or also running (``started``). The view is read again after
    each commit that touched the execution, never on a timer. None when the execution is still unknown
    at the end.
    """
    deadline = time.monotonic() + wait
    while True:
        # Only the status is read on each wake-up (one indexed read); the view once, at the end.
        status = queries.status(execution_id)
        remaining = deadline - time.monotonic()
        if (status is not None and has_reached(status, until)) or remaining <= 0:
            return queries.consequence(execution_id)
        # No await between the read above and this wait: no commit can slip in between.
        await wait_for_change(execution_id, remaining)
