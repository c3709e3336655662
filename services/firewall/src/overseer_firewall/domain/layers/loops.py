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

from overseer_events.canonical import canonical_bytes
from overseer_firewall.domain.layers.base import KernelView, LoopWindow
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L2, Evaluation, Finding
from overseer_firewall.domain.tools import ToolSpec

_PASS = Finding(L2, "pass", "no loop")
HISTORY_PER_SESSION = 256
MAX_SESSIONS = 10_000


def loop_signature(
    tool: str, spec: ToolSpec | None, args: dict[str, object], *, stripped: bool = False
) -> tuple[bytes, bytes]:
    """(identity of a call for loop detection, the canonical JSON of its schema-known arguments).

    ``stripped``: L1 already removed the parameters the schema does not know.
    """
    if not stripped and spec is not None and any(name not in spec.properties for name in args):
        args = {k: v for k, v in args.items() if k in spec.properties}
    canonical = canonical_bytes(args)
    return tool.encode() + b"\x00" + canonical, canonical


class SessionWindow:
    """One session's calls in time order, with running counts per signature and per tool.

    Counting on append and on expiry makes a check O(1) instead of a scan of the window.
    """

    __slots__ = ("entries", "signatures", "tools")

    def __init__(self) -> None:
        self.entries: deque[tuple[float, bytes, str]] = deque()
        self.signatures: dict[bytes, int] = {}
        self.tools: dict[str, int] = {}

    def expire(self, horizon: float) -> None:
        entries = self.entries
        while entries and entries[0][0] < horizon:
            self._forget(entries.popleft())

    def add(self, at: float, signature: bytes, tool: str) -> None:
        if len(self.entries) >= HISTORY_PER_SESSION:
            self._forget(self.entries.popleft())
        self.entries.append((at, signature, tool))
        self.signatures[signature] = self.signatures.get(signature, 0) + 1
        self.tools[tool] = self.tools.get(tool, 0) + 1

    def _forget(self, entry: tuple[float, bytes, str]) -> None:
        _, signature, tool = entry
        left = self.signatures[signature] - 1
        if left:
            self.signatures[signature] = left
        else:
            del self.signatures[signature]
        left = self.tools[tool] - 1
        if left:
            self.tools[tool] = left
        else:
            del self.tools[tool]


class LoopHistory:
    """Per session, a :class:`SessionWindow`. Bounded in sessions (oldest forgotten) and in length."""

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: dict[str, SessionWindow] = {}

    def window(self, session_id: str, now: float, window_seconds: float) -> LoopWindow | None:
        """The session's window as of ``now``. Expiring old entries is invisible to any later check."""
        window = self._sessions.get(session_id)
        if window is not None:
            window.expire(now - window_seconds)
        return window

    def observe(self, session_id: str, at: float, signature: bytes, tool: str) -> None:
        window = self._sessions.get(session_id)
        if window is None:
            if len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
            window = self._sessions[session_id] = SessionWindow()
        window.add(at, signature, tool)


class LoopLayer:
    name = L2

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        thresholds = kernel.policy.admin.loops
        proposal = ev.proposal
        signature, ev.canonical = loop_signature(ev.tool, ev.spec, ev.args, stripped=True)
        ev.signature = signature
        window = kernel.history.window(proposal.session_id, proposal.occurred_at, thresholds.window_seconds)
        if window is None or not window.entries:
            ev.record(_PASS)
            return
        tool = ev.tool
        repeats = window.signatures.get(signature, 0) + 1
        uses = window.tools.get(tool, 0) + 1
        same_args, same_tool = thresholds.same_args, thresholds.same_tool
        entries = window.entries
        oscillating = (
            thresholds.oscillation
            and len(entries) >= 3
            and entries[-2][1] == signature
            and entries[-3][1] == entries[-1][1]
            and entries[-1][1] != signature
        )
        if repeats < max(2, same_args - 1) and uses < max(2, same_tool // 2) and not oscillating:
            ev.record(_PASS)  # below even the tightened thresholds: no need to look at confidence
            return
        tightened = _low_confidence(kernel, ev, thresholds.low_confidence, thresholds.confidence_window)
        if tightened:
            same_args = max(2, same_args - 1)
            same_tool = max(2, same_tool // 2)
        window_text = f"{thresholds.window_seconds:g} s"
        note = " (thresholds tightened: recent confidence is low)" if tightened else ""
        details = {"repeats": repeats, "uses": uses, "tightened": tightened}
        if repeats >= same_args:
            message = f"loop: repeat — {tool} with the same arguments {repeats} times in {window_text}{note}"
            ev.hold(L2, message, Level.CONFIRM, pattern="repeat", **details)
        elif uses >= same_tool:
            message = f"loop: flood — {tool} {uses} times in {window_text}{note}"
            ev.hold(L2, message, Level.CONFIRM, pattern="flood", **details)
        elif oscillating:
            message = f"loop: oscillation — {entries[-1][2]} and {tool} alternate (A-B-A-B)"
            ev.hold(L2, message, Level.CONFIRM, pattern="oscillation", **details)
        else:
            ev.record(_PASS)


def _low_confidence(kernel: KernelView, ev: Evaluation, threshold: float, window: int) -> bool:
    if window <= 0:
        return False
    values = list(kernel.bus.confidences(ev.proposal.session_id))
    if ev.proposal.confidence is not None:
        values.append(ev.proposal.confidence)
    recent = values[-window:]
    return bool(recent) and sum(recent) / len(recent) < threshold
