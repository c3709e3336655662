"""What every layer sees: the evaluation in progress and the kernel's current state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from overseer_firewall.domain.budgets import SessionUsage
from overseer_firewall.domain.grants import SessionGrants
from overseer_firewall.domain.model import Evaluation
from overseer_firewall.domain.modes import ModeJudgement, ModeSetting
from overseer_firewall.domain.paths import PathResolver, absolute
from overseer_firewall.domain.perception import PerceptionBus
from overseer_firewall.domain.policy import PolicyStore, SandboxPolicy


class ModeView(Protocol):
    def judge(self, principal: str, tool: str, irreversible: bool, now: float) -> ModeJudgement: ...

    def setting(self, principal: str) -> ModeSetting: ...


class LoopWindow(Protocol):
    """A session's recent calls: time-ordered entries plus counts per signature and per tool."""

    @property
    def entries(self) -> Sequence[tuple[float, bytes, str]]: ...

    @property
    def signatures(self) -> Mapping[bytes, int]: ...

    @property
    def tools(self) -> Mapping[str, int]: ...


class LoopHistoryView(Protocol):
    def window(self, session_id: str, now: float, window_seconds: float) -> LoopWindow | None: ...


@dataclass(frozen=True, slots=True)
class SandboxGeometry:
    """The sandbox's roots, lexical and real (symlinks resolved once, when the policy changes)."""

    root: str
    output: str
    readable: tuple[str, ...]
    real_root: str
    real_output: str
    real_readable: tuple[str, ...]


def sandbox_geometry(
    policy: SandboxPolicy, *, sandbox: str, cwd: str, home: str, resolver: PathResolver
) -> SandboxGeometry:
    root = absolute(sandbox, "/")
    output = absolute(policy.output_dir, root)
    places = {"{sandbox}": root, "{cwd}": absolute(cwd, "/"), "{home}": absolute(home, "/")}
    readable = []
    for entry in policy.readable_paths:
        for placeholder, value in places.items():
            entry = entry.replace(placeholder, value)
        readable.append(absolute(entry, root))
    return SandboxGeometry(
        root=root,
        output=output,
        readable=tuple(readable),
        real_root=resolver.realpath(root),
        real_output=resolver.realpath(output),
        real_readable=tuple(resolver.realpath(r) for r in readable),
    )


@dataclass(slots=True)
class KernelView:
    """Read access to the kernel's state for one evaluation; layers never write to it."""

    policy: PolicyStore
    bus: PerceptionBus
    modes: ModeView
    history: LoopHistoryView
    sandbox: SandboxGeometry
    resolver: PathResolver
    grants: SessionGrants
    usage: SessionUsage


class Layer(Protocol):
    name: str

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        """Add this layer's finding(s) to ``ev``; may hold, deny or rewrite arguments."""
