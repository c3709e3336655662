"""An agent process that dies in the middle of a guarded call it was allowed to run (before it could report).

``python tests/fakes/crashing_agent.py URL TOKEN SESSION`` guards ``notes.read`` and calls it; the function
prints the execution's arguments and kills the process at once, as a crash would.
"""

from __future__ import annotations

import os
import sys

from overseer.guard import Guard


def main(url: str, token: str, session: str) -> None:
    guard = Guard(url, token, session_id=session, timeout=30)

    @guard.tool(name="notes.read")
    def read(path: str) -> str:
        print(f"allowed to read {path}; dying now", flush=True)
        os._exit(3)

    read(path="plans.md")


if __name__ == "__main__":
    main(*sys.argv[1:4])
