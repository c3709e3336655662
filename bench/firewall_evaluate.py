"""Benchmark ``firewall_evaluate``: the firewall kernel in process, one proposal at a time.

Each operation is what the firewall's evaluate path does for one
``execution.proposed``: hashing the event's audit record (the service's own
``audit_record``) into the chain, all five layers (L1 schema, L2 loops, L3
policy with argument rules, L4 sandbox with real ``realpath`` calls, L5
breaker), the verdict, folding the proposal into the kernel state, a preview
for a held call, and hashing the audit record of the verdict's
``firewall.verdict_issued``. A realistic mix of tools and sessions. Reading the
proposal from its event and building the verdict's event stay outside the
timings, as do the store's writes: the scenario keeps to the evaluate path.
Prints one JSON line: ``{"scenario":"firewall_evaluate","ops":N,"ops_per_s":…,"p50_us":…,"p99_us":…}``;
then, with the ``peers`` dependency group installed, the Agent Governance Toolkit's policy and audit
path over the same calls, audited in memory and in its hash-chained flight recorder
(``bench/peers/agt_policy.py``), each with a ``ratio_firewall_evaluate_vs_agt`` line.

    python bench/firewall_evaluate.py [--ops N] [--warmup N] [--no-peer]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from overseer_events.catalogue import ExecutionProposed, Principal
from overseer_events.envelope import Envelope, new_event
from overseer_firewall.adapters.filesystem import RealPathResolver
from overseer_firewall.application.audit_trail import audit_record
from overseer_firewall.application.translation import proposal_from_event, verdict_event
from overseer_firewall.bootstrap import DEFAULT_POLICY_FILE as POLICY_FILE
from overseer_firewall.domain.audit import EMPTY_HEAD, AuditEntry, AuditHead, append_entry
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.model import Proposal
from overseer_firewall.domain.policy import PolicyStore, parse_admin_policy
from overseer_firewall.domain.preview import build_preview

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # ``bench`` as a package, run as a script
from bench.common import emit, ops_summary
from bench.firewall_calls import CALLS

# 1,000 concurrent agent sessions, 20 proposals a second in all: each session proposes about every
# 50 s, so the loop layer sees a few calls per session in its window, as in real use.
SESSIONS = 1_000
SPACING_S = 0.05


def build(sandbox: Path) -> FirewallEngine:
    admin = parse_admin_policy(tomllib.loads(POLICY_FILE.read_text(encoding="utf-8")), version=1)
    return FirewallEngine(
        PolicyStore(admin),
        sandbox_root=str(sandbox),
        cwd=str(sandbox.parent),
        home=str(sandbox.parent),
        resolver=RealPathResolver([str(sandbox), str(sandbox.parent)]),
    )


def proposals(n: int, seed: int = 7) -> list[tuple[Envelope, Proposal]]:
    """``n`` proposals as they arrive: the decoded event and the proposal read from it."""
    rng = random.Random(seed)
    out = []
    now = time.time()
    agent = Principal(kind="agent", id="bench")
    for i in range(n):
        tool, args = CALLS[rng.randrange(len(CALLS))]
        data = ExecutionProposed(
            execution_id=f"exec-{i}",
            session_id=f"session-{rng.randrange(SESSIONS)}",
            tool=tool,
            args=args,
            proposer=agent,
            confidence=round(rng.uniform(0.3, 1.0), 2),
        )
        event = new_event(
            data,
            aggregate_id=data.execution_id,
            aggregate_version=1,
            actor="gateway:agent",
            occurred_at=now + i * SPACING_S,
        )
        out.append((event, proposal_from_event(data, event.occurred_at)))
    return out


def audited(head: AuditHead | AuditEntry, event: Envelope) -> AuditEntry:
    record = audit_record(event)
    assert record is not None, f"{event.type} is not audited"
    return append_entry(head, record)


def run(
    engine: FirewallEngine, batch: list[tuple[Envelope, Proposal]], head: AuditHead | AuditEntry
) -> tuple[list[int], AuditHead | AuditEntry]:
    timings = []
    clock = time.perf_counter_ns
    for event, proposal in batch:
        started = clock()
        head = audited(head, event)
        verdict = engine.evaluate(proposal)
        engine.observe(proposal, verdict.signature)
        preview = build_preview(verdict.tool, verdict.args) if verdict.needs_preview else None
        elapsed = clock() - started
        data = event.data
        assert isinstance(data, ExecutionProposed)
        issued = new_event(
            verdict_event(verdict, data.proposer, preview),
            aggregate_id=f"verdict:{data.execution_id}",
            aggregate_version=1,
            actor="firewall",
        )
        started = clock()
        head = audited(head, issued)
        timings.append(elapsed + clock() - started)
    return timings, head


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=5_000)
    parser.add_argument("--no-peer", action="store_true", help="skip the Agent Governance Toolkit peer")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp) / "sandbox"
        for folder in ("notes", "reports", "out", "drafts"):
            (sandbox / folder).mkdir(parents=True)
        engine = build(sandbox)
        warm, measured = proposals(options.warmup, seed=1), proposals(options.ops, seed=2)
        _, head = run(engine, warm, EMPTY_HEAD)
        gc.collect()
        gc.freeze()  # what a long-running service does after start-up: the young heap stays small
        timings, _ = run(engine, measured, head)
        gc.unfreeze()
    ours = ops_summary([t / 1e9 for t in timings])
    emit({"scenario": "firewall_evaluate", "ops": len(timings), **ours})
    if options.no_peer:
        return
    try:
        from bench.peers import agt_policy
    except ImportError as missing:  # the peers group is not installed: say so, measure ours alone
        print(f"[firewall_evaluate] no Agent Governance Toolkit peer: {missing}", file=sys.stderr)
        return
    for chained in (False, True):
        peer = agt_policy.run(CALLS, options.ops, options.warmup, chained=chained)
        emit(peer)
        emit(
            {
                "scenario": "ratio_firewall_evaluate_vs_agt",
                "agt_audit": "flight_recorder" if chained else "in_memory_log",
                "overseer_ops_per_s": ours["ops_per_s"],
                "agt_ops_per_s": peer["ops_per_s"],
                "ratio": round(ours["ops_per_s"] / peer["ops_per_s"], 2),
            }
        )


if __name__ == "__main__":
    main()
