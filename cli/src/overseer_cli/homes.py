"""Which stack a command means: the folder it keeps everything in, its home (``OVERSEER_HOME``).

In this order: ``OVERSEER_HOME`` when it is set; the ``.overseer`` folder of the current directory when
there is one (a checkout where ``make run`` ran); the home the last ``overseer up`` on this machine
recorded for this user (in the user's state directory), so ``overseer status`` or ``approvals`` find
the running stack from any folder; else ``./.overseer``, where ``overseer up`` creates one. A command that
finds no stack says which home it looked in, and why that one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_state_path

LOCAL = ".overseer"


@dataclass(frozen=True, slots=True)
class Home:
    path: Path
    why: str  # how it was chosen, in words for a message
    recorded: bool = False  # found through the record of the last `overseer up`

    def describe(self) -> str:
        return f"{self.path} ({self.why})"


def recorded_file() -> Path:
    """Where ``overseer up`` records the home it runs in, for this user."""
    return user_state_path("overseer") / "home"


def record(home: Path) -> None:
    """Remember ``home`` as the one the running stack uses (best effort: a read-only state dir is no error)."""
    with contextlib.suppress(OSError):
        path = recorded_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{home.resolve()}\n", encoding="utf-8")


def recorded() -> Path | None:
    try:
        text = recorded_file().read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return Path(text) if text else None


def choose(env: Mapping[str, str], cwd: Path) -> Home:
    if env.get("OVERSEER_HOME"):
        return Home(Path(env["OVERSEER_HOME"]), "OVERSEER_HOME")
    local = cwd / LOCAL
    if local.is_dir():
        return Home(local, f"the {LOCAL} folder here")
    last = recorded()
    if last is not None and last.is_dir():
        return Home(last, f"where `overseer up` last ran, recorded in {recorded_file()}", recorded=True)
    return Home(local, f"the default, {LOCAL} in the current folder")


def settle(starting: bool = False) -> Home:
    """Choose the home for this command and put it in ``OVERSEER_HOME``, where every part reads it.

    ``starting``: for ``overseer up``, which starts a stack where it is told (``OVERSEER_HOME``) or in
    this folder's ``.overseer``, never in the home another stack recorded."""
    home = choose(os.environ, Path.cwd())
    if starting and home.recorded:
        home = Home(Path.cwd() / LOCAL, f"{LOCAL} in the current folder")
    os.environ["OVERSEER_HOME"] = str(home.path)
    return home
