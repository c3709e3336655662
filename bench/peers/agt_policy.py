"""The Agent Governance Toolkit's policy and audit path, as ``firewall_evaluate``'s peer.

Microsoft's Agent Governance Toolkit (``agent-os-kernel`` on PyPI) checks an agent's tool call
against declarative rules (``PolicyEvaluator`` over a ``PolicyDocument``: the first matching rule
by priority decides allow, deny, audit or block) and writes the decision to its audit logger
(``GovernanceAuditLogger``). Each operation here is one call of the same mix of tools and sessions
``firewall_evaluate`` judges: the rules the toolkit can express of Overseer's default policy (tools
denied, paths that leave the sandbox or reach system files blocked, an irreversible tool audited,
the rest allowed), evaluated, and the decision audited two ways, one line each:

* ``peer_agt_policy_audit``: logged to an in-memory backend (like ``firewall_evaluate``, which
  hashes its audit records into the chain and leaves the store's writes out);
* ``peer_agt_policy_flight_recorder``: recorded in the toolkit's flight recorder, its tamper-evident
  audit (each entry hashed with the previous one's hash, in SQLite, written in batches).

    python bench/peers/agt_policy.py [--ops N] [--warmup N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agent_control_plane.flight_recorder import FlightRecorder
from agent_os.audit_logger import GovernanceAuditLogger, InMemoryBackend
from agent_os.policies.evaluator import PolicyEvaluator
from agent_os.policies.schema import (
    PolicyAction,
    PolicyCondition,
    PolicyDefaults,
    PolicyDocument,
    PolicyOperator,
    PolicyRule,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``bench`` as a package, run as a script
from bench.common import emit, ops_summary
from bench.firewall_calls import CALLS

SESSIONS = 1_000


def rule(
    name: str, field: str, operator: PolicyOperator, value: Any, action: PolicyAction, priority: int
) -> PolicyRule:
    return PolicyRule(
        name=name,
        condition=PolicyCondition(field=field, operator=operator, value=value),
        action=action,
        priority=priority,
        message=name.replace("_", " "),
    )


def policy() -> PolicyDocument:
    return PolicyDocument(
        name="overseer-default-peer",
        rules=[
            rule("no_shell", "tool_name", PolicyOperator.EQ, "shell.run", PolicyAction.DENY, 100),
            rule("no_parent_paths", "path", PolicyOperator.CONTAINS, "..", PolicyAction.BLOCK, 90),
            rule(
                "no_system_files",
                "path",
                PolicyOperator.MATCHES,
                r"^/(etc|usr|var|root)/",
                PolicyAction.BLOCK,
                80,
            ),
            rule("mail_is_audited", "tool_name", PolicyOperator.EQ, "email.send", PolicyAction.AUDIT, 50),
            rule(
                "known_tools",
                "tool_name",
                PolicyOperator.IN,
                ["fs.read", "fs.list", "fs.write", "time.get_current_time", "time.convert_time"],
                PolicyAction.ALLOW,
                10,
            ),
        ],
        defaults=PolicyDefaults(action=PolicyAction.DENY),
    )


def contexts(calls: Sequence[tuple[str, dict[str, object]]], n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` calls of the mix, each as the context the toolkit evaluates (the path lifted to the top)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        tool, args = calls[rng.randrange(len(calls))]
        out.append(
            {
                "tool_name": tool,
                "agent_id": f"bench-{i % SESSIONS}",
                "path": str(args.get("path", "")),
                "args": args,
            }
        )
    return out


def logged(evaluator: PolicyEvaluator) -> Callable[[dict[str, Any]], None]:
    """The decision written to the toolkit's governance audit logger, kept in memory."""
    audit = GovernanceAuditLogger()
    audit.add_backend(InMemoryBackend())

    def one(context: dict[str, Any]) -> None:
        started = time.perf_counter()
        decision = evaluator.evaluate(context)
        audit.log_decision(
            agent_id=context["agent_id"],
            action=context["tool_name"],
            decision=decision.action,
            reason=decision.reason,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            rule=decision.matched_rule,
        )

    return one


def recorded(evaluator: PolicyEvaluator, recorder: FlightRecorder) -> Callable[[dict[str, Any]], None]:
    """The call and its decision in the toolkit's flight recorder: a SHA-256 chain over its entries, in
    SQLite (WAL), written in batches of 100 — the toolkit's tamper-evident audit."""

    def one(context: dict[str, Any]) -> None:
        trace = recorder.start_trace(context["agent_id"], context["tool_name"], context["args"])
        decision = evaluator.evaluate(context)
        if decision.allowed:
            recorder.log_success(trace)
        else:
            recorder.log_violation(trace, decision.reason)

    return one


def run(
    calls: Sequence[tuple[str, dict[str, object]]], ops: int, warmup: int, *, chained: bool = False
) -> dict[str, Any]:
    """``ops`` evaluations and audit entries after ``warmup``; the JSON line's fields. ``chained``:
    audited in the flight recorder (hash-chained, on a file) instead of the in-memory logger."""
    evaluator = PolicyEvaluator([policy()])
    # The recorder warns of every blocked call on its logger: thousands of lines, none of them news.
    logging.getLogger("FlightRecorder").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        recorder = FlightRecorder(db_path=str(Path(tmp) / "flight.db")) if chained else None
        one = recorded(evaluator, recorder) if recorder is not None else logged(evaluator)
        try:
            result = _measure(one, contexts(calls, warmup, seed=3), contexts(calls, ops))
        finally:
            if recorder is not None:
                recorder.close()
    scenario = "peer_agt_policy_flight_recorder" if chained else "peer_agt_policy_audit"
    return {"scenario": scenario, "ops": ops, **result}


def _measure(
    one: Callable[[dict[str, Any]], None], warm: list[dict[str, Any]], work: list[dict[str, Any]]
) -> dict[str, float]:
    for context in warm:
        one(context)
    latencies: list[float] = []
    gc.collect()
    gc.freeze()  # as firewall_evaluate does: the young heap stays small
    for context in work:
        started = time.perf_counter()
        one(context)
        latencies.append(time.perf_counter() - started)
    gc.unfreeze()
    return ops_summary(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    options = parser.parse_args()
    for chained in (False, True):
        emit(run(CALLS, options.ops, options.warmup, chained=chained))


if __name__ == "__main__":
    main()
