"""L4 sandbox: every path a tool touches is normalised and judged against the sandbox.

* **write** paths are rewritten into the sandbox output directory; ``..`` that
  climbs out, an absolute path outside the sandbox, or a symlink leading out is
  refused (deny).
* **read** paths are allowed only inside ``readable_paths`` (default: the
  sandbox and the working directory), or at or below a path a person granted
  to the session for that tool (``policy.path_granted``); anything else,
  including through ``..`` or a symlink, waits for a CONFIRM.
* a **working directory** (``shell.run``'s ``cwd``) must stay inside the sandbox.

Rewritten paths are relative to the sandbox root (``notes/a.txt``), the form
the executor's tools resolve against their sandbox; readable paths outside the
sandbox stay absolute.
"""

from __future__ import annotations

from overseer_firewall.domain.layers.base import KernelView, SandboxGeometry
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.model import L4, Evaluation, Finding
from overseer_firewall.domain.paths import absolute, relative, within
from overseer_firewall.domain.tools import PathAccess, PathArg

_PASS = Finding(L4, "pass", "no file system access")
_INSIDE = Finding(L4, "pass", "paths inside the sandbox")


class SandboxLayer:
    name = L4

    def run(self, ev: Evaluation, kernel: KernelView) -> None:
        spec = ev.spec
        if spec is None or not spec.path_args:
            ev.record(_PASS)
            return
        rewrites: dict[str, str] = {}
        for path_arg in spec.path_args:
            raw = ev.args.get(path_arg.name, path_arg.default)
            if raw is None:
                continue
            target = _target(ev, kernel, path_arg, raw)
            if target is None:
                return
            if target != raw:
                rewrites[path_arg.name] = target
            if target != ev.args.get(path_arg.name):
                ev.args[path_arg.name] = target
                ev.canonical = None  # the arguments changed: their canonical form must be recomputed
        if rewrites:
            ev.record(
                Finding(L4, "rewrite", "paths normalised (writes into the sandbox)", {"rewritten": rewrites})
            )
        elif not ev.findings or ev.findings[-1].layer != L4:
            ev.record(_INSIDE)


def _target(ev: Evaluation, kernel: KernelView, path_arg: PathArg, raw: object) -> str | None:
    """Where a path argument points once judged (relative to the sandbox root if inside it); None: denied."""
    if not isinstance(raw, str) or "\x00" in raw:
        ev.deny(L4, f"{path_arg.name}: not a usable path")
        return None
    g = kernel.sandbox
    match path_arg.access:
        case PathAccess.WRITE:
            return _confined(ev, kernel, g, path_arg.name, raw, g.output, g.real_output)
        case PathAccess.CWD:
            return _confined(ev, kernel, g, path_arg.name, raw, g.root, g.real_root)
        case PathAccess.READ:
            return _readable(ev, kernel, g, path_arg.name, raw)
        case _:
            raise ValueError(f"unknown path access {path_arg.access!r}")


def _confined(
    ev: Evaluation, kernel: KernelView, g: SandboxGeometry, name: str, raw: str, base: str, real_base: str
) -> str | None:
    """A path that must stay under ``base``: rewritten relative to the sandbox root, or denied."""
    if raw.startswith("/"):
        target = absolute(raw, "/")
        if not within(target, g.root):
            ev.deny(L4, f"{name}: absolute path {raw!r} is outside the sandbox", path=raw)
            return None
        if not within(target, base):
            target = absolute(relative(target, g.root), base)
    else:
        target = absolute(raw, base)
        if not within(target, base):
            ev.deny(L4, f"{name}: {raw!r} climbs out of the sandbox", path=raw)
            return None
    real = kernel.resolver.realpath(target)
    if not within(real, real_base):
        ev.deny(L4, f"{name}: {raw!r} leads out of the sandbox through a symlink", path=raw)
        return None
    return relative(target, g.root)


def _readable(ev: Evaluation, kernel: KernelView, g: SandboxGeometry, name: str, raw: str) -> str:
    """A path that may be read: inside ``readable_paths`` it passes, else the call waits for a CONFIRM."""
    target = absolute(raw, g.root)
    inside = any(within(target, root) for root in g.readable)
    if not inside:
        _granted(ev, kernel, name, raw, target)
    elif not any(within(kernel.resolver.realpath(target), root) for root in g.real_readable):
        ev.hold(
            L4, f"{name}: {raw!r} leads outside the readable paths through a symlink", Level.CONFIRM, path=raw
        )
    return relative(target, g.root) if within(target, g.root) else target


def _granted(ev: Evaluation, kernel: KernelView, name: str, raw: str, target: str) -> None:
    """A read outside the readable paths: it passes inside a path granted to the session for this tool
    (symlinks below the granted path must stay below it, as the executor checks), else waits for a CONFIRM."""
    root = kernel.grants.root_for(ev.proposal.session_id, ev.tool, target)
    if root is None:
        ev.hold(L4, f"{name}: {raw!r} is outside the readable paths", Level.CONFIRM, path=raw)
    elif not within(kernel.resolver.realpath(target), kernel.resolver.realpath(root)):
        ev.hold(
            L4, f"{name}: {raw!r} leads outside the path granted through a symlink", Level.CONFIRM, path=raw
        )
    else:
        ev.record(Finding(L4, "pass", f"{name}: granted for this session", {"granted": root, "path": raw}))
