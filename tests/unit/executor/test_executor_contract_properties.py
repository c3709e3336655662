"""Properties of the contract rules under any sequence of what can happen to a contract."""

from __future__ import annotations

from executor_builders import AGENT, ALICE, contract, human, proposal, verdict
from hypothesis import given, settings
from hypothesis import strategies as st

from overseer_events.catalogue import ExecutionTransitioned
from overseer_events.machines import EXECUTION_MACHINE, TERMINAL_STATUSES, ExecutionStatus
from overseer_executor.domain.claims import Twin
from overseer_executor.domain.contract import ExecutionContract, Outcome
from overseer_executor.domain.rules import (
    ToolOutcome,
    decide_approval_expiry,
    decide_human_decision,
    decide_recovery,
    decide_session_cancel,
    decide_tool_outcome,
    decide_verdict,
)

HAPPENINGS = st.one_of(
    st.tuples(st.just("verdict"), st.sampled_from(["allow", "hold", "deny"]), st.booleans()),
    st.tuples(
        st.just("decision"),
        st.sampled_from(["approve", "reject", "completed", "failed", "timeout"]),
        st.sampled_from(["right", "wrong", "self"]),
    ),
    st.tuples(st.just("tool"), st.sampled_from(["succeeded", "failed", "timed_out"]), st.none()),
    st.tuples(st.just("cancel"), st.none(), st.none()),
    st.tuples(st.just("expire"), st.floats(0, 100), st.none()),
    st.tuples(st.just("recover"), st.booleans(), st.none()),
)


def happen(c: ExecutionContract, what: tuple, now: float) -> Outcome | str:
    kind, a, b = what
    match kind:
        case "verdict":
            return decide_verdict(
                c,
                verdict(a),
                dependency=None,
                twin=Twin("x", ExecutionStatus.COMPLETED) if b else None,
                now=now,
            )
        case "decision":
            hash_ = "0" * 64 if b == "wrong" else None
            return decide_human_decision(
                c,
                human(decision=a, hash_=hash_, by=AGENT if b == "self" else ALICE),
                twin=None,
                now=now,
            )
        case "tool":
            return decide_tool_outcome(c, ToolOutcome(a, "text"), now=now)
        case "cancel":
            return decide_session_cancel(c, "abort", now=now)
        case "expire":
            return decide_approval_expiry(c, 50, now=a)
        case "recover":
            return decide_recovery(c, tool_idempotent=a, now=now)
    raise AssertionError(kind)


@settings(max_examples=300, deadline=None)
@given(st.lists(HAPPENINGS, max_size=12), st.sampled_from(["email.send", "fs.list"]))
def test_any_sequence_moves_the_contract_only_along_the_machine(happenings: list[tuple], tool: str) -> None:
    c = contract(proposal(tool=tool, args={} if tool == "fs.list" else None))
    triggers: list[str] = []
    version = c.version
    for i, what in enumerate(happenings):
        was_terminal = c.status in TERMINAL_STATUSES
        out = happen(c, what, now=10.0 + i)
        if isinstance(out, str):
            continue  # refused: nothing changed
        moves = [e for e in out.events if isinstance(e, ExecutionTransitioned)]
        if was_terminal:
            assert out.events == ()
            assert out.run_tool is False
        triggers += [m.trigger for m in moves]
        version += len(out.events)
        c = out.contract
        assert c.version == version
        if out.run_tool:
            assert c.status.value == "running"
            if what[0] == "recover":
                assert c.idempotent
                assert not c.irreversible
    assert EXECUTION_MACHINE.replay(triggers) == c.status
