"""FirewallEngine: the one place a safety judgement is made.

``evaluate`` runs the five layers in order over a proposal and composes one
:class:`Verdict`; it reads the kernel's state and changes nothing. ``observe``
then folds the proposal into that state (loop history, confidence, grant
steps) — the service calls it when the proposal is recorded, and again for
every stored proposal when it starts, so the state is a projection of the store;
``count_usage`` counts it against its session's budget (loaded from the store at start).

Fail-closed: an exception inside a layer becomes an ``error`` finding and a
hold at CONFIRM at least; a deny stops the pipeline (later layers cannot undo it).
"""

from __future__ import annotations

from collections.abc import Sequence

from overseer_events.canonical import NotCanonical, args_hash, sha256_hex
from overseer_firewall.domain.budgets import SessionUsage
from overseer_firewall.domain.gate import HumanGate
from overseer_firewall.domain.grants import SessionGrants
from overseer_firewall.domain.layers.base import KernelView, Layer, SandboxGeometry, sandbox_geometry
from overseer_firewall.domain.layers.breaker import BreakerLayer
from overseer_firewall.domain.layers.loops import LoopHistory, LoopLayer, loop_signature
from overseer_firewall.domain.layers.parameters import ParameterLayer
from overseer_firewall.domain.layers.permission import PermissionLayer
from overseer_firewall.domain.layers.sandbox import SandboxLayer
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import L3, MODE, SESSION, Evaluation, Finding, Proposal, Verdict
from overseer_firewall.domain.modes import AgentMode, AgentModes
from overseer_firewall.domain.paths import LexicalResolver, PathResolver
from overseer_firewall.domain.perception import PerceptionBus
from overseer_firewall.domain.policy import PolicyStore

NO_HASH = "0" * 64
_PAST = {Decision.HOLD: "held", Decision.DENY: "denied", Decision.ALLOW: "allowed"}
DEFAULT_LAYERS: tuple[Layer, ...] = (
    ParameterLayer(),
    LoopLayer(),
    PermissionLayer(),
    SandboxLayer(),
    BreakerLayer(),
)


class FirewallEngine:
    """The kernel: PolicyStore + five layers + the state they read (bus, loops, modes, sessions, grants)."""

    def __init__(
        self,
        policy: PolicyStore | None = None,
        *,
        sandbox_root: str = "/sandbox",
        cwd: str = "/",
        home: str = "/",
        resolver: PathResolver | None = None,
        layers: Sequence[Layer] = DEFAULT_LAYERS,
    ) -> None:
        self.resolver: PathResolver = resolver or LexicalResolver()
        self._roots = (sandbox_root, cwd, home)
        self.bus = PerceptionBus()
        self.history = LoopHistory()
        self.modes = AgentModes()
        self.gate = HumanGate()
        self.grants = SessionGrants()
        self.usage = SessionUsage()
        self.layers = tuple(layers)
        store = policy or PolicyStore()
        self.kernel = KernelView(
            store,
            self.bus,
            self.modes,
            self.history,
            self._geometry(store),
            self.resolver,
            self.grants,
            self.usage,
        )

    # -- policy ------------------------------------------------------------------
    @property
    def policy(self) -> PolicyStore:
        return self.kernel.policy

    def set_policy(self, store: PolicyStore) -> None:
        if store.admin.sandbox != self.kernel.policy.admin.sandbox:
            self.kernel.sandbox = self._geometry(store)
        self.kernel.policy = store

    @property
    def sandbox(self) -> SandboxGeometry:
        return self.kernel.sandbox

    def _geometry(self, store: PolicyStore) -> SandboxGeometry:
        sandbox, cwd, home = self._roots
        return sandbox_geometry(
            store.admin.sandbox, sandbox=sandbox, cwd=cwd, home=home, resolver=self.resolver
        )

    # -- judging -------------------------------------------------------------------
    def evaluate(self, proposal: Proposal) -> Verdict:
        kernel = self.kernel
        if proposal.action_type != "tool_call" or not proposal.tool:
            return self._human_request(proposal)
        tool = proposal.tool
        spec = kernel.policy.catalogue.get(tool)
        ev = Evaluation(proposal, spec, tool)
        for layer in self.layers:
            try:
                layer.run(ev, kernel)
            except Exception as exc:  # fail closed: a broken layer holds, it never allows
                ev.hold(
                    layer.name,
                    f"{layer.name} failed ({type(exc).__name__}: {exc}); held for a person",
                    Level.CONFIRM,
                    error=type(exc).__name__,
                )
            if ev.denied:
                break
        if self.gate.is_paused(proposal.session_id):
            ev.hold(
                SESSION, "the session is paused by an abort: new proposals wait for a person", Level.CONFIRM
            )
        return self._compose(ev)

    def _compose(self, ev: Evaluation) -> Verdict:
        proposal = ev.proposal
        try:
            digest = sha256_hex(ev.canonical) if ev.canonical is not None else args_hash(ev.args)
        except NotCanonical as exc:
            ev.deny("L1.parameters", f"arguments have no canonical JSON form: {exc}")
            digest = NO_HASH
        level = ev.level
        decision = (
            Decision.DENY if ev.denied else (Decision.HOLD if level >= Level.CONFIRM else Decision.ALLOW)
        )
        alerts: tuple[str, ...] = ()
        if decision is not Decision.ALLOW and self._audited(ev):
            alerts = (
                f"audited agent {proposal.proposer}: {ev.tool} would have been {_PAST[decision]}: "
                + "; ".join(ev.reasons),
            )
            if decision is Decision.HOLD:
                decision = Decision.ALLOW
                ev.record(Finding(MODE, "allow", "audited mode: allowed now, reviewed after the fact"))
        return Verdict(
            execution_id=proposal.execution_id,
            session_id=proposal.session_id,
            tool=ev.tool,
            level=level,
            decision=decision,
            findings=tuple(ev.findings),
            reasons=tuple(ev.reasons),
            args=ev.args,
            args_hash=digest,
            policy_version=self.kernel.policy.version,
            irreversible=ev.irreversible,
            requested_by=proposal.proposer,
            needs_preview=decision is Decision.HOLD,
            notify=decision is Decision.ALLOW and level is Level.NOTIFY,
            alerts=alerts,
            signature=ev.signature,
        )

    def _audited(self, ev: Evaluation) -> bool:
        return self.kernel.modes.setting(ev.proposal.proposer).mode is AgentMode.AUDITED

    def _human_request(self, proposal: Proposal) -> Verdict:
        """An ``ecs_request`` (the agent asks a person) or a call without a tool: always a CONFIRM hold."""
        args = dict(proposal.args)
        try:
            digest = args_hash(args)
        except NotCanonical:
            digest = NO_HASH
        message = "a question for a person" if proposal.action_type == "ecs_request" else "no tool named"
        return Verdict(
            execution_id=proposal.execution_id,
            session_id=proposal.session_id,
            tool=proposal.tool,
            level=Level.CONFIRM,
            decision=Decision.HOLD,
            findings=(Finding(L3, "hold", message),),
            reasons=(message,),
            args=args,
            args_hash=digest,
            policy_version=self.kernel.policy.version,
            irreversible=bool(proposal.irreversible),
            requested_by=proposal.proposer,
            needs_preview=True,
        )

    # -- state ----------------------------------------------------------------------
    def observe(self, proposal: Proposal, signature: bytes | None = None) -> None:
        """Fold a recorded proposal into the kernel state the next evaluations read."""
        if proposal.tool and proposal.action_type == "tool_call":
            if signature is None:
                spec = self.kernel.policy.catalogue.get(proposal.tool)
                try:
                    signature, _ = loop_signature(proposal.tool, spec, dict(proposal.args))
                except NotCanonical:
                    signature = b""
            self.history.observe(proposal.session_id, proposal.occurred_at, signature, proposal.tool)
            self.modes.count_step(proposal.proposer, proposal.occurred_at)
        if proposal.confidence is not None:
            self.bus.record_confidence(proposal.session_id, proposal.confidence)
        if proposal.stagnation:
            self.bus.record_stagnation(proposal.session_id, proposal.stagnation)

    def count_usage(self, proposal: Proposal) -> None:
        """A judged call of a tool counts against its session's budget, as the read model counts verdicts
        (live only: a restart loads the counts from that read model instead of re-counting proposals)."""
        if proposal.action_type == "tool_call" and proposal.tool:
            self.usage.counted(proposal.session_id, proposal.model_tokens)

    def evaluate_and_observe(self, proposal: Proposal) -> Verdict:
        verdict = self.evaluate(proposal)
        self.observe(proposal, verdict.signature)
        self.count_usage(proposal)
        return verdict
