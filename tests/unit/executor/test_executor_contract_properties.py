"""Properties of the contract rules under any sequence of what can happen to a contract."""

from __future__ import annotations

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
from tests.unit.executor.executor_builders import AGENT, ALICE, contract, human, proposal, verdict

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


# What can happen, and its two details: (kind, what, how), as HAPPENINGS draws them.
Happening = tuple[str, str | float | bool | None, str | bool | None]


def happen(c: ExecutionContract, what: Happening, now: float) -> Outcome | str:
    match what:
        case ("verdict", str(decision), bool(has_twin)):
            return decide_verdict(
                c,
                verdict(decision),
                dependency=None,
                twin=Twin("x", ExecutionStatus.COMPLETED) if has_twin else None,
                now=now,
            )
        case ("decision", str(answer), str(how)):
            hash_ = "0" * 64 if how == "wrong" else None
            return decide_human_decision(
                c,
                human(decision=answer, hash_=hash_, by=AGENT if how == "self" else ALICE),
                twin=None,
                now=now,
            )
        case ("tool", "succeeded" | "failed" | "timed_out" as kind, None):
            return decide_tool_outcome(c, ToolOutcome(kind, "text"), now=now)
        case ("cancel", None, None):
            return decide_session_cancel(c, "abort", now=now)
        case ("expire", float(at), None):
            return decide_approval_expiry(c, 50, now=at)
        case ("recover", bool(idempotent), None):
            return decide_recovery(c, tool_idempotent=idempotent, now=now)
    raise AssertionError(what)


@settings(max_examples=300, deadline=None)
@given(st.lists(HAPPENINGS, max_size=12), st.sampled_from(["email.send", "fs.list"]))
def test_any_sequence_moves_the_contract_only_along_the_machine(
    happenings: list[Happening], tool: str
) -> None:
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
