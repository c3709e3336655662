"""The claim on an idempotency key: at most one irreversible effect per key, in flight or done.

The duplicate guard refused an irreversible action whose key had
COMPLETED. That left a window: two identical actions, both approved before the
first finished, both ran. The guard now also counts a twin *in flight*:

* a contract **claims** its idempotency key when it enters RUNNING (the
  ``start`` of any verdict, the ``resume`` of an approval) and holds it until
  it reaches a terminal state. A contract WAITING holds it too: for an
  approval it entered RUNNING first (``start`` then ``suspend``), and after a
  crash it waits on a reconciliation whose outcome is unknown;
* an irreversible contract may enter RUNNING only when no other contract with
  the same key is RUNNING, WAITING or COMPLETED (its :class:`Twin`). FAILED,
  REJECTED and CANCELLED twins do not count: a retry is allowed.

The guard refuses rather than waits: the refused contract ends REJECTED with
a reason that names the twin (``duplicate: …``), so the proposer learns at
once and may propose again once the twin ended without effect.

Two contracts can hold one key only in a store written before the claim
existed (both twins WAITING on an approval card). Then the one approved first
runs: at resume, a twin that only waits on its own approval has done nothing
and cannot run unless approved, and that approval will meet this one RUNNING
or COMPLETED and end its card.

The claim is the contract's own status in the executor's store, written in the
transaction that journals the transition; nothing here is in-memory state.
"""

from __future__ import annotations

from dataclasses import dataclass

from overseer_events.machines import ExecutionStatus
from overseer_executor.domain.contract import ExecutionContract

# Statuses of a contract that holds its key's claim (it entered RUNNING and has not ended).
CLAIMING = frozenset({ExecutionStatus.RUNNING, ExecutionStatus.WAITING})
# Statuses of a twin that forbid another irreversible run with the same key.
BLOCKING = CLAIMING | {ExecutionStatus.COMPLETED}


# Forms a WAITING twin may wait on without having done anything (not a reconciliation).
_NOTHING_DONE_YET = frozenset({"approval", "confirmation"})


@dataclass(frozen=True, slots=True)
class Twin:
    """Another contract with the same idempotency key, in flight (RUNNING / WAITING) or COMPLETED.

    ``waiting_on`` is the kind of form a WAITING twin waits on (``approval``, ``reconciliation`` …).
    """

    execution_id: str
    status: ExecutionStatus
    waiting_on: str | None = None


def twin_refusal(contract: ExecutionContract, twin: Twin | None, *, resuming: bool = False) -> str | None:
    """Why ``contract`` may not enter RUNNING because of ``twin`` (None when it may).

    Only an irreversible contract is guarded; a twin whose status does not
    block (FAILED, REJECTED, CANCELLED, PENDING) is no reason. ``resuming``: the
    contract is approved out of WAITING; a twin that only waits on its own
    approval then does not block it (see the module's last paragraph).
    """
    if not contract.irreversible or twin is None or twin.status not in BLOCKING:
        return None
    if twin.execution_id == contract.execution_id:
        return None
    if resuming and twin.status == ExecutionStatus.WAITING and twin.waiting_on in _NOTHING_DONE_YET:
        return None
    key = contract.idempotency_key
    if twin.status == ExecutionStatus.COMPLETED:
        return (
            f"duplicate: an identical irreversible action already completed as {twin.execution_id} "
            f"(idempotency key {key})"
        )
    return (
        f"duplicate: an identical irreversible action is in flight as {twin.execution_id} "
        f"({twin.status.value}; idempotency key {key}); propose it again if that one ends without effect"
    )
