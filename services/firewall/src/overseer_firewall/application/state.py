"""The firewall's in-memory kernel, kept as a projection of its own store.

The :class:`FirewallEngine` judges from memory (a SQLite read per layer would
cost more than the whole evaluation). That memory is folded from the same
events the SQLite read models are built from:

* policy, the tool catalogue, agent modes, sessions, path grants and the sessions' budget usage are loaded
  from their read models at start
  (so ``rebuild`` then start gives the same policy state);
* loop windows and perception counters are refilled from the most recent events;
* while running, every event the firewall records or emits is applied here.

Concurrency hazard — a unit of work can roll back after its events were
applied here. So events that can only make the firewall *stricter* (a
proposal seen, a session paused, a decision counted) are applied at once,
where the next proposal in the same batch must see them; events that can
make it *looser* (a policy replacement, a user level change, a mode, a path
grant, a session resumed) are applied only after their transaction committed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from overseer_events.catalogue import (
    AdminPolicyReplaced,
    AgentModeSet,
    CatalogueChanged,
    ContractCreated,
    ExecutionTransitioned,
    HumanDecisionRecorded,
    PathGranted,
    SessionCancelRequested,
    SessionPaused,
    SessionResumed,
    ToolChangeAccepted,
    UserLevelChanged,
    VerdictIssued,
)
from overseer_events.envelope import Envelope, EventData
from overseer_events.machines import TERMINAL_STATUSES
from overseer_firewall.application.ports import PolicyRows, StoredProposal
from overseer_firewall.application.translation import catalogue_of, mode_setting, path_grant
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import Proposal
from overseer_firewall.domain.perception import classify_result
from overseer_firewall.domain.policy import PolicyStore, UserPolicy, parse_admin_policy

log = logging.getLogger("overseer.firewall")

Lookup = Callable[[str], StoredProposal | None]
TERMINAL = frozenset(status.value for status in TERMINAL_STATUSES)
# Types whose effect can loosen the firewall: applied in memory only after their commit.
LOOSENING = frozenset(
    {
        "policy.admin_replaced",
        "policy.user_level_changed",
        "policy.agent_mode_set",
        "policy.path_granted",
        "policy.catalogue_changed",
        "policy.tool_change_accepted",
        "firewall.session_resumed",
    }
)
PERCEPTION = (
    "firewall.verdict_issued",
    "human.decision_recorded",
    "execution.transitioned",
    "execution.contract_created",  # one that ran, or was refused, as it was announced carries its end
)
SYSTEM_PRINCIPAL_KIND = "system"


class KernelState:
    """The engine plus the fold that keeps it equal to the store."""

    def __init__(self, engine: FirewallEngine) -> None:
        self.engine = engine
        # Keyed by the event's class: each fold receives its data typed (the catalogue decoded it).
        self._apply: dict[type[EventData], Callable[[Any, Lookup], None]] = {
            VerdictIssued: self._verdict,
            HumanDecisionRecorded: self._decision,
            ExecutionTransitioned: self._transitioned,
            ContractCreated: self._created,
            AdminPolicyReplaced: self._admin,
            UserLevelChanged: self._user,
            AgentModeSet: self._mode,
            CatalogueChanged: self._catalogue,
            ToolChangeAccepted: self._change_accepted,
            PathGranted: self._granted,
            SessionPaused: self._paused,
            SessionCancelRequested: self._cancel,
            SessionResumed: self._resumed,
        }

    # -- start-up -------------------------------------------------------------------------
    def load(self, rows: PolicyRows) -> None:
        """Policy, modes, sessions and path grants from the read models."""
        engine = self.engine
        store = engine.policy
        if rows.admin_policy is not None and rows.admin_version is not None:
            store = store.with_admin(parse_admin_policy(rows.admin_policy, version=rows.admin_version))
        catalogue = (
            catalogue_of(rows.catalogue, rows.withdrawn, rows.unreviewed)
            if rows.catalogue is not None
            else store.base_catalogue
        )
        store = PolicyStore(store.admin, UserPolicy(dict(rows.user_levels), rows.user_version), catalogue)
        engine.set_policy(store)
        for principal, setting in rows.modes.items():
            engine.modes.set(principal, setting)
        for session_id, state in rows.sessions.items():
            if state.paused:
                engine.gate.paused(session_id)
            for _ in range(state.aborts - 1):
                engine.gate.cancel_requested(session_id)
        for grant in rows.grants:
            engine.grants.add(grant)
        for session_id, usage in rows.usage.items():
            engine.usage.load(session_id, usage)

    def warm(self, events: Iterable[Envelope], lookup: Lookup) -> int:
        """Refill loop windows and perception counters from recent events, oldest first."""
        count = 0
        for event in events:
            if event.type in PERCEPTION:
                self.apply(event, lookup)
                count += 1
        return count

    # -- live -------------------------------------------------------------------------------
    def apply(
        self,
        event: Envelope,
        lookup: Lookup,
        *,
        proposal: Proposal | None = None,
        signature: bytes | None = None,
    ) -> None:
        if event.type == "firewall.verdict_issued" and proposal is not None:
            self.engine.observe(proposal, signature)
            self.engine.count_usage(proposal)
            return
        fold = self._apply.get(type(event.data))
        if fold is not None:
            fold(event.data, lookup)

    def apply_own(
        self, after_commit: Callable[[Callable[[], None]], None], event: Envelope, lookup: Lookup
    ) -> None:
        """An event this service just emitted (or, a replica, was told by partition 0): now when it
        tightens, after commit when it may loosen."""
        if event.type in LOOSENING:
            after_commit(lambda: self.apply(event, lookup))
        else:
            self.apply(event, lookup)

    # -- folds ------------------------------------------------------------------------------
    def _verdict(self, data: VerdictIssued, lookup: Lookup) -> None:
        stored = lookup(data.execution_id)
        if stored is not None:
            self.engine.observe(stored.proposal)

    def _decision(self, data: HumanDecisionRecorded, lookup: Lookup) -> None:
        if data.decided_by.kind == SYSTEM_PRINCIPAL_KIND:
            return
        # Another replica's decision names its session and tool; this one's may be older than that.
        stored = lookup(data.execution_id)
        session_id = data.session_id or (stored.proposal.session_id if stored else None)
        tool = data.tool or (stored.proposal.tool if stored else None)
        if session_id is None:
            return
        self.engine.bus.record_human_intervention(session_id)
        if data.decision in ("approve", "reject") and tool and data.comment != ABORT_COMMENT:
            self.engine.bus.record_approval(
                tool, data.decision == "approve", data.latency_ms, str(data.decided_by)
            )

    def _created(self, data: ContractCreated, lookup: Lookup) -> None:
        ended = data.ended
        if ended is not None:
            self._transitioned(ended, lookup)

    def _transitioned(self, data: ExecutionTransitioned, lookup: Lookup) -> None:
        if data.to_status not in TERMINAL:
            return
        stored = lookup(data.execution_id)
        if stored is None or not stored.proposal.tool:
            return
        outcome = classify_result(data.to_status, data.result, data.error_message)
        self.engine.bus.record_outcome(data.session_id, stored.proposal.tool, outcome, data.result)

    def _admin(self, data: AdminPolicyReplaced, lookup: Lookup) -> None:
        admin = parse_admin_policy(data.policy, version=data.version)
        self.engine.set_policy(self.engine.policy.with_admin(admin))

    def _user(self, data: UserLevelChanged, lookup: Lookup) -> None:
        self.engine.set_policy(
            self.engine.policy.with_user_change(
                tool=data.tool,
                before=Level.parse(data.before) if data.before else None,
                after=Level.parse(data.after) if data.after else None,
                trigger=data.trigger,
                hint=data.hint,
            )
        )

    def _mode(self, data: AgentModeSet, lookup: Lookup) -> None:
        self.engine.modes.set(data.principal, mode_setting(data.mode, data.grant))

    def _catalogue(self, data: CatalogueChanged, lookup: Lookup) -> None:
        self.engine.set_policy(
            self.engine.policy.with_catalogue(catalogue_of(data.tools, data.withdrawn, data.unreviewed))
        )

    def _change_accepted(self, data: ToolChangeAccepted, lookup: Lookup) -> None:
        policy = self.engine.policy
        self.engine.set_policy(policy.with_catalogue(policy.base_catalogue.accepted(data.tool)))

    def _granted(self, data: PathGranted, lookup: Lookup) -> None:
        self.engine.grants.add(path_grant(data))

    def _paused(self, data: SessionPaused, lookup: Lookup) -> None:
        self.engine.gate.paused(data.session_id)

    def _cancel(self, data: SessionCancelRequested, lookup: Lookup) -> None:
        self.engine.gate.cancel_requested(data.session_id)

    def _resumed(self, data: SessionResumed, lookup: Lookup) -> None:
        self.engine.gate.resumed(data.session_id)


# A first-stage abort is recorded as a rejection with this comment: it stops the session, it says
# nothing about the tool, so it is not counted as the approver rejecting the tool.
ABORT_COMMENT = "abort: the session is paused"
