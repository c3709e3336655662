"""What the gateway consumes from whom: what its approval channels and its decisions need to know.

The notice book (``adapters.notices.NoticeBook``, a projection) records each event in the same
transaction that takes it in; the handlers only wake the notice sender once that commits, so a
held call's notice goes out at once rather than at the sender's next poll. The book's cards are also
what a decision is checked against (``application.queries.open_question``), so the executor's cards
are taken in at once, not in bursts: a person's decision usually comes a moment after the card.
"""

from __future__ import annotations

from collections.abc import Callable

from overseer_events.catalogue import ApprovalEscalated, EcsRequested
from overseer_events.envelope import Envelope, EventData
from overseer_runtime.provisioning import Subscription
from overseer_runtime.service import HandlerTable
from overseer_runtime.unit_of_work import UnitOfWork

SUBSCRIPTIONS: tuple[Subscription, ...] = (
    # The executor's approval cards: on the approval's path (see the docstring).
    Subscription(owner="executor", types=("ecs.requested",)),
    # The cards closed (off the path: a close names its card, so it may come after a later card); the
    # firewall's escalations, decisions (a decided call's notices still due are dropped) and admin policy
    # (its [[notify]] routes). Off every critical path.
    Subscription(owner="executor", types=("ecs.closed",), linger=0.02),
    Subscription(
        owner="firewall",
        types=("firewall.approval_escalated", "human.decision_recorded", "policy.admin_replaced"),
        linger=0.02,
    ),
)


def handlers(wake: Callable[[], None]) -> HandlerTable[UnitOfWork]:
    def after_commit(_: EventData, uow: UnitOfWork, __: Envelope) -> None:
        uow.after_commit(wake)

    return HandlerTable(lambda uow: uow).on(EcsRequested, after_commit).on(ApprovalEscalated, after_commit)
