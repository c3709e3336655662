"""L2 loops: behaviour-based loop detection over a session's recent proposals.

Three patterns hold a call, each named in the reason:

* **repeat** — the same tool with the same arguments ≥ N times in the window;
* **flood** — the same tool ≥ M times in the window;
* **oscillation** — A-B-A-B: two different calls alternating.

When the session's recent confidence is low the agent is more likely stuck,
so N and M tighten (N-1, M/2, never below 2). The current call counts.
"""

from __future__ import annotations

from collections import deque

from overseer.firewall.domain.canonical import canonical_bytes
from overseer.firewall.domain.layers.base import KernelView
from overseer.firewall.domain.levels import Level
from overseer.firewall.domain.model import L2, Evaluation, Finding
from overseer.firewall.domain.tools import ToolSpec

_PASS = Finding(L2, "pass", "no loop")
HISTORY_PER_SESSION = 256
MAX_SESSIONS = 10_000

Entry = tuple[float, bytes, str]


def loop_signature(tool: str, spec: ToolSpec | None, args: dict[str, object]) -> bytes:
    """Identity of a call for loop detection: the tool plus its canonical (schema-known) arguments."""
    if spec is not None and any(name not in spec.properties for name in args):
        args = {k: v for k, v in args.items() if k in spec.properties}
    return tool.encode() + b"\x00" + canonical_bytes(args)


class LoopHistory:
    """Per session, the recent calls as (time, signature, tool). Bounded in sessions and length."""

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, deque[Entry]] = {}

    def recent(self, session_id: str, now: float, window_seconds: float) -> list[Entry]:
        entries = self._sessions.get(session_id)
        if not entries:
            return []
        horizon = now - window_seconds
        return [e for e in entries if e[0] >= horizon]

    def observe(self, session_id: str, at: float, signature: bytes, tool: str) -> None:
        entries = self._sessions.get(session_id)
        if entries is None:
            if len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
            entries = self._sessions[session_id] = deque(maxlen=HISTORY_PER_SESSION)
        entries.append((at, signature, tool))


class LoopLayer:
    name = L2

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        thresholds = kernel.policy.admin.loops
        proposal = ev.proposal
        signature = ev.signature = loop_signature(ev.tool, ev.spec, ev.args)
        recent = kernel.history.recent(proposal.session_id, proposal.occurred_at, thresholds.window_seconds)
        if not recent:
            ev.record(_PASS)
            return
        same_args, same_tool = thresholds.same_args, thresholds.same_tool
        tightened = _low_confidence(kernel, ev, thresholds.low_confidence, thresholds.confidence_window)
        if tightened:
            same_args = max(2, same_args - 1)
            same_tool = max(2, same_tool // 2)
        tool = ev.tool
        repeats = 1
        uses = 1
        for _, sig, entry_tool in recent:
            if entry_tool == tool:
                uses += 1
                if sig == signature:
                    repeats += 1
        window = f"{thresholds.window_seconds:g} s"
        note = " (thresholds tightened: recent confidence is low)" if tightened else ""
        details = {"repeats": repeats, "uses": uses, "tightened": tightened}
        if repeats >= same_args:
            ev.hold(
                L2,
                f"loop: repeat — {tool} with the same arguments {repeats} times in {window}{note}",
                Level.CONFIRM,
                pattern="repeat",
                **details,
            )
        elif uses >= same_tool:
            ev.hold(
                L2,
                f"loop: flood — {tool} {uses} times in {window}{note}",
                Level.CONFIRM,
                pattern="flood",
                **details,
            )
        elif (
            thresholds.oscillation
            and len(recent) >= 3
            and recent[-2][1] == signature
            and recent[-3][1] == recent[-1][1]
            and recent[-1][1] != signature
        ):
            ev.hold(
                L2,
                f"loop: oscillation — {recent[-1][2]} and {tool} alternate (A-B-A-B)",
                Level.CONFIRM,
                pattern="oscillation",
                **details,
            )
        else:
            ev.record(_PASS)


def _low_confidence(kernel: KernelView, ev: Evaluation, threshold: float, window: int) -> bool:
    values = list(kernel.bus.confidences(ev.proposal.session_id))
    if ev.proposal.confidence is not None:
        values.append(ev.proposal.confidence)
    if not values or window <= 0:
        return False
    recent = values[-window:]
    return sum(recent) / len(recent) < threshold
