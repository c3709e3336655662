"""The gateway's pure rules: who may call what, how subject patterns match, when a decision is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from overseer_events.catalogue import Principal
from overseer_gateway.domain.access import Caller, Role, may
from overseer_gateway.domain.actions import session_id_problem, tool_name_problem
from overseer_gateway.domain.approvals import AgentRun, ApprovalCard, refuse_decision, refuse_report
from overseer_gateway.domain.patterns import InvalidPattern, SubjectFilter

# The roles (docs/gateway.md): viewer < agent, viewer < operator, admin can do everything; agent and operator apart.
EXPECTED = {
    Role.VIEWER: {Role.VIEWER},
    Role.AGENT: {Role.VIEWER, Role.AGENT},
    Role.OPERATOR: {Role.VIEWER, Role.OPERATOR},
    Role.ADMIN: {Role.VIEWER, Role.AGENT, Role.OPERATOR, Role.ADMIN},
}


@pytest.mark.parametrize("holder", list(Role))
@pytest.mark.parametrize("required", list(Role))
def test_roles_grant_exactly_the_contracts_table(holder: Role, required: Role) -> None:
    assert may(holder, required) is (required in EXPECTED[holder])


def test_a_caller_acts_as_a_principal_of_the_kind_it_plays() -> None:
    alice = Caller("alice", Role.ADMIN)
    assert alice.as_principal("agent") == Principal(kind="agent", id="alice")
    assert alice.as_principal("operator") == Principal(kind="operator", id="alice")


SUBJECT = "overseer.executor.execution.transitioned"


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        (None, True),
        ("", True),
        ("execution.transitioned", True),
        ("execution.*", True),
        ("execution.>", True),
        ("executor.>", True),
        ("executor.execution.*", True),
        ("overseer.executor.>", True),
        ("*.execution.transitioned", True),
        ("firewall.>", False),
        ("execution", False),
        ("execution.proposed", False),
        ("firewall.>, execution.transitioned", True),
        ("ecs.requested,firewall.*", False),
    ],
)
def test_subject_patterns_match_type_owner_or_full_subject(pattern: str | None, matches: bool) -> None:
    assert SubjectFilter.parse(pattern).matches(SUBJECT) is matches


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        ("execution.transitioned", True),
        ("executor.execution.transitioned", True),
        ("overseer.executor.execution.transitioned", True),
        ("firewall.>, execution.transitioned", True),
        (None, False),
        ("execution.*", False),
        ("executor.>", False),
        ("*.execution.transitioned", False),
        ("execution.proposed", False),
        ("execution", False),
    ],
)
def test_a_subject_is_named_only_by_a_pattern_without_wildcards(pattern: str | None, names: bool) -> None:
    assert SubjectFilter.parse(pattern).names(SUBJECT) is names


@pytest.mark.parametrize("pattern", ["a..b", ".a", "a.", "a.>.b", "exec*.x", "a.b>"])
def test_malformed_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidPattern):
        SubjectFilter.parse(pattern)


def card(*, kind: str = "approval", status: str = "waiting", decided: bool = False) -> ApprovalCard:
    return ApprovalCard(
        execution_id="e1",
        kind=kind,
        status=status,
        args_hash="h1",
        requested_by=Principal(kind="agent", id="bot"),
        decided=decided,
    )


OPERATOR = Principal(kind="operator", id="olga")


def refusal(
    c: ApprovalCard,
    decision: str = "approve",
    args_hash: str = "h1",
    *,
    decider: Principal = OPERATOR,
    already: bool = False,
) -> int | None:
    result = refuse_decision(
        c, decision=decision, args_hash=args_hash, decider=decider, already_decided=already
    )
    return None if result is None else result.status


def test_a_fresh_decision_on_a_waiting_card_with_its_hash_passes() -> None:
    assert refusal(card()) is None
    assert refusal(card(kind="reconciliation"), "failed") is None


def test_the_requester_is_refused_403_whatever_its_role_word() -> None:
    assert refusal(card(), decider=Principal(kind="operator", id="bot")) == 403
    assert refusal(card(status="completed"), decider=Principal(kind="admin", id="bot")) == 403


@pytest.mark.parametrize(
    ("c", "already", "args_hash", "status"),
    [
        (card(status="running"), False, "h1", 409),
        (card(status="completed"), False, "h1", 409),
        (card(decided=True), False, "h1", 409),
        (card(), True, "h1", 409),
        (card(), False, "other", 409),
    ],
)
def test_not_waiting_decided_twice_or_other_arguments_is_409(
    c: ApprovalCard, already: bool, args_hash: str, status: int
) -> None:
    assert refusal(c, args_hash=args_hash, already=already) == status


def test_each_card_kind_takes_only_its_words() -> None:
    assert refusal(card(), "completed") == 422
    assert refusal(card(kind="reconciliation"), "approve") == 422


@pytest.mark.parametrize("name", ["fs.list", "time.get_current_time", "my-server.tool_1", "weather"])
def test_tool_names_that_are_well_formed(name: str) -> None:
    assert tool_name_problem(name) is None


@pytest.mark.parametrize("name", ["rm -rf /", "../etc", "fs..list", ".fs", "fs/list", "x" * 200, "fs.list\n"])
def test_tool_names_that_are_refused(name: str) -> None:
    assert tool_name_problem(name) is not None


def test_session_ids_are_plain_words() -> None:
    assert session_id_problem("demo-01a2:x_y.z") is None
    assert session_id_problem("a b") is not None
    assert session_id_problem("s" * 129) is not None


OWNERS = ("gateway", "reasoning", "firewall", "executor", "col", "observer")
HEADS = ("audit", "co", "conversation", "ecs", "execution", "firewall", "human", "observation")
TYPES = (
    "execution.proposed",
    "execution.transitioned",
    "ecs.requested",
    "firewall.verdict_issued",
    "human.responded",
    "co.command.create",
    "observation.execution_state",
)
PATTERNS = (
    "ecs.requested",
    "execution.*",
    "execution.>",
    "executor.>",
    "ns.executor.>",
    "firewall.>,execution.transitioned",
    "*.*.execution.*",
    "gateway.co.command.*",
    "co.>,human.*",
    ">",
    "*.responded",
)


def _nats_match(p: str, s: str) -> bool:
    """NATS subject matching, as the server applies a consumer's filter."""
    return _tokens(p.split("."), s.split("."))


def _tokens(p: list[str], s: list[str]) -> bool:
    for i, part in enumerate(p):
        if part == ">":
            return len(s) > i
        if i >= len(s) or (part != "*" and part != s[i]):
            return False
    return len(p) == len(s)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_server_side_narrowing_never_drops_an_event_the_pattern_matches(pattern: str) -> None:
    subject_filter = SubjectFilter.parse(pattern)
    narrowed = subject_filter.server_filters("ns", OWNERS, HEADS)
    for owner in OWNERS:
        for event_type in TYPES:
            subject = f"ns.{owner}.{event_type}"
            if subject_filter.matches(subject) and narrowed:
                assert any(_nats_match(f, subject) for f in narrowed), (pattern, subject, narrowed)


def test_narrowing_asks_the_server_for_only_what_a_type_pattern_names() -> None:
    assert SubjectFilter.parse("ecs.requested").server_filters("ns", OWNERS, HEADS) == ["ns.*.ecs.requested"]
    assert SubjectFilter.parse("executor.>").server_filters("ns", OWNERS, HEADS) == ["ns.executor.>"]
    assert SubjectFilter.parse(None).server_filters("ns", OWNERS, HEADS) == []
    # "firewall.>" reads as a type and as an owner; the two overlap, which NATS refuses: no narrowing.
    assert SubjectFilter.parse("firewall.>").server_filters("ns", OWNERS, HEADS) == []


def test_a_type_one_service_writes_narrows_to_that_service_s_one_subject() -> None:
    def writers_of(event_type: str) -> list[str]:
        return {"ecs.requested": ["executor"], "firewall.alert": ["firewall", "executor"]}.get(event_type, [])

    def narrowed(pattern: str) -> list[str]:
        return SubjectFilter.parse(pattern).server_filters("ns", OWNERS, HEADS, writers_of)

    assert narrowed("ecs.requested") == ["ns.executor.ecs.requested"]
    assert narrowed("firewall.alert") == ["ns.*.firewall.alert"]  # two writers
    assert narrowed("execution.transitioned") == ["ns.*.execution.transitioned"]  # no writer known
    assert narrowed("ecs.*") == ["ns.*.ecs.*"]
    assert narrowed("ecs.requested,execution.proposed") == [
        "ns.executor.ecs.requested",
        "ns.*.execution.proposed",
    ]


RUN = AgentRun("exec-9", "agent", "agent:alpha", "running", {"path": "a.md"}, "h" * 64)
ALPHA = Principal(kind="agent", id="alpha")


@pytest.mark.parametrize(
    ("run", "reporter", "args_hash", "already", "expected"),
    [
        (RUN, ALPHA, "h" * 64, False, None),
        (RUN, Principal(kind="agent", id="mallory"), "h" * 64, False, (403, "Not yours")),
        (replace(RUN, runs_at="executor"), ALPHA, "h" * 64, False, (409, "Runs at the executor")),
        (RUN, ALPHA, "h" * 64, True, (409, "Already reported")),
        (replace(RUN, status="waiting"), ALPHA, "h" * 64, False, (409, "Not allowed to run")),
        (RUN, ALPHA, "x" * 64, False, (409, "Arguments changed")),
    ],
)
def test_an_outcome_report_counts_only_from_its_agent_once_while_it_runs_with_the_approved_arguments(
    run: AgentRun, reporter: Principal, args_hash: str, already: bool, expected: tuple[int, str] | None
) -> None:
    refused = refuse_report(run, reporter=reporter, args_hash=args_hash, already_reported=already)
    assert (None if refused is None else (refused.status, refused.title)) == expected
