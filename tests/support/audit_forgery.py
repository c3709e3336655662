"""What someone with write access to the firewall's SQLite file does to hide a forged audit record.

One record is forged, every later entry re-hashed, and every copy of the chain's heads the file holds
(the heads its verdicts carry, those it published on its own) rewritten to agree: the file then
passes every check that reads only the file. The heads on the events stream are out of its reach.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from overseer_firewall.domain.audit import GENESIS, chain_hash, record_text

Forge = Callable[[dict[str, Any]], None]


def rewrite_history(db: Path, index: int, forge: Forge) -> None:
    """Forge entry ``index`` of ``db``'s chain with ``forge`` and make everything in the file agree."""
    conn = sqlite3.connect(db, timeout=10)
    with conn:
        conn.execute("DROP TRIGGER IF EXISTS events_are_append_only_update")
        rewritten: dict[int, str] = {}
        previous = GENESIS
        for idx, text in conn.execute("SELECT idx, record FROM fw_audit ORDER BY idx").fetchall():
            record = orjson.loads(text)
            if idx == index:
                forge(record)
            text = record_text(record)
            digest = chain_hash(previous, text)
            conn.execute(
                "UPDATE fw_audit SET prev_hash = ?, hash = ?, record = ? WHERE idx = ?",
                (previous, digest, text, idx),
            )
            rewritten[idx] = previous = digest
        heads = conn.execute(
            "SELECT position, type, body FROM events WHERE origin = 'local' "
            "AND type IN ('audit.head_published', 'firewall.verdict_issued')"
        ).fetchall()
        for position, kind, raw in heads:
            body = orjson.loads(raw)
            head = body["data"] if kind == "audit.head_published" else body["data"].get("audit_head")
            if head is None:
                continue
            head["hash"] = rewritten[head["index"]]
            first = head["index"] - len(head["hashes"]) + 1
            head["hashes"] = [rewritten[i] for i in range(first, head["index"] + 1)]
            conn.execute("UPDATE events SET body = ? WHERE position = ?", (orjson.dumps(body), position))
    conn.close()
