"""``OVERSEER_HOME`` is private: owner-only directories and files.

It holds every secret a stack has (the NATS keys, ``tokens.json``) and every
store (the SQLite files, the NATS store, received mail, logs). Everything in it
is created owner-only (the processes run with umask 077) and
:func:`secure_home` tightens what an older or hand-made home left readable.
The tool sandbox is left as it is: tools manage it.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_UMASK = 0o077
SANDBOX = "sandbox"


def private_umask() -> None:
    """Files and directories this process creates from now on are readable by their owner alone."""
    os.umask(PRIVATE_UMASK)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` created with mode 0600 from the start (no world-readable window)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    path.chmod(0o600)  # an existing file keeps its mode through O_CREAT: set it


def secure_home(home: Path) -> None:
    """Make ``home`` and everything in it but the sandbox owner-only (0700 directories, 0600 files)."""
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    for root, dirs, files in os.walk(home):
        if Path(root) == home:
            dirs[:] = [d for d in dirs if d != SANDBOX]
        for name in (*dirs, *files):
            path = Path(root) / name
            try:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode & 0o700)
            except FileNotFoundError:  # removed meanwhile (a SQLite journal)
                pass
