"""Session path grants in the kernel: L4 lets a granted read pass, in its session, for the tools it covers."""

from __future__ import annotations

import pytest

from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.grants import GrantRefused, GrantRequest, PathGrant, SessionGrants, judge_grant
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import L4
from overseer_firewall.domain.paths import LexicalResolver
from overseer_firewall.domain.policy import PolicyStore
from overseer_firewall.domain.replay import RecordedProposal, replay
from tests.unit.firewall.fw_kernel import CWD, SANDBOX, default_admin, engine_for, proposal

REPORT = "/home/alice/reports/q3.txt"


def grant(
    path: str, tool: str = "fs.read", session_id: str = "session-1", request_id: str = "ask-1"
) -> PathGrant:
    return PathGrant(session_id, tool, path, request_id, "operator:alice")


def read(engine: FirewallEngine, path: str, tool: str = "fs.read", session_id: str = "session-1") -> Level:
    return engine.evaluate(proposal(tool, {"path": path}, session_id=session_id)).level


class SymlinkWorld(LexicalResolver):
    def __init__(self, links: dict[str, str]) -> None:
        self.links = links

    def realpath(self, path: str) -> str:
        for link, target in self.links.items():
            if path == link or path.startswith(link + "/"):
                return super().realpath(target + path[len(link) :])
        return super().realpath(path)


def test_a_read_outside_the_readable_paths_passes_once_granted_to_the_session() -> None:
    engine = engine_for()
    assert read(engine, REPORT) is Level.CONFIRM
    engine.grants.add(grant(REPORT))
    verdict = engine.evaluate(proposal("fs.read", {"path": REPORT}))
    assert (verdict.level, verdict.decision) == (Level.AUTO, Decision.ALLOW)
    passed = verdict.finding(L4)
    assert passed is not None
    assert passed.details["granted"] == REPORT
    assert verdict.args["path"] == REPORT  # stays absolute: the executor reads it where it is


def test_a_grant_holds_only_in_its_own_session() -> None:
    engine = engine_for()
    engine.grants.add(grant(REPORT, session_id="session-1"))
    assert read(engine, REPORT, session_id="session-2") is Level.CONFIRM


def test_a_granted_directory_covers_what_lies_below_it_and_nothing_beside_it() -> None:
    engine = engine_for()
    engine.grants.add(grant("/home/alice/reports"))
    assert read(engine, "/home/alice/reports/2024/q3.txt") is Level.AUTO
    assert read(engine, "/home/alice/reports/../secrets.txt") is Level.CONFIRM
    assert read(engine, "/home/alice/reports-private/q3.txt") is Level.CONFIRM
    assert read(engine, "/home/alice") is Level.CONFIRM


def test_a_granted_file_is_not_a_granted_directory() -> None:
    engine = engine_for()
    engine.grants.add(grant(REPORT))
    assert read(engine, "/home/alice/reports/q4.txt") is Level.CONFIRM


def test_a_read_grant_covers_listing_but_a_list_grant_does_not_cover_reading() -> None:
    engine = engine_for()
    engine.grants.add(grant("/home/alice/reports", tool="fs.read", request_id="ask-read"))
    engine.grants.add(grant("/srv/shared", tool="fs.list", request_id="ask-list"))
    assert read(engine, "/home/alice/reports", tool="fs.list") is Level.AUTO
    assert read(engine, "/srv/shared", tool="fs.list") is Level.AUTO
    assert read(engine, "/srv/shared/plan.txt", tool="fs.read") is Level.CONFIRM


def test_a_grant_never_lets_a_write_leave_the_sandbox() -> None:
    engine = engine_for()
    engine.grants.add(grant("/home/alice/reports"))
    engine.grants.add(grant("/home/alice/reports", tool="fs.write", request_id="forged"))
    verdict = engine.evaluate(proposal("fs.write", {"path": REPORT, "content": "x"}))
    assert verdict.decision is Decision.DENY


def test_a_symlink_below_a_granted_path_that_leads_out_of_it_still_waits_for_a_confirm() -> None:
    engine = engine_for(resolver=SymlinkWorld({"/home/alice/reports/keys": "/home/alice/.ssh"}))
    engine.grants.add(grant("/home/alice/reports"))
    assert read(engine, "/home/alice/reports/q3.txt") is Level.AUTO
    verdict = engine.evaluate(proposal("fs.read", {"path": "/home/alice/reports/keys/id_ed25519"}))
    assert verdict.level is Level.CONFIRM
    assert any("symlink" in reason for reason in verdict.reasons)


def test_a_relative_read_that_climbs_into_a_granted_path_passes_rewritten_to_it() -> None:
    engine = engine_for()
    outside = "/srv/overseer/exports/list.csv"  # the sandbox is /srv/overseer/sandbox
    engine.grants.add(grant(outside))
    verdict = engine.evaluate(proposal("fs.read", {"path": "../exports/list.csv"}))
    assert verdict.level is Level.AUTO
    assert verdict.args["path"] == outside


def test_replay_keeps_the_grants_a_recorded_verdict_was_given() -> None:
    engine = engine_for()
    engine.grants.add(grant(REPORT))
    granted = proposal("fs.read", {"path": REPORT})
    verdict = engine.evaluate(granted)
    record = RecordedProposal(granted, verdict.level, verdict.decision, verdict.findings)
    report = replay(
        default_admin(),
        [record],
        catalogue=PolicyStore().base_catalogue,
        sandbox_root=SANDBOX,
        cwd=CWD,
        home="/srv/overseer",
        resolver=LexicalResolver(),
    )
    assert (report.evaluated, report.changed) == (1, ())


def test_grants_are_described_per_session_in_path_order() -> None:
    grants = SessionGrants(
        [
            grant("/b", session_id="s-2", request_id="r-3"),
            grant("/z", request_id="r-1"),
            grant("/a", tool="fs.list", request_id="r-2"),
            grant("/z", request_id="r-1"),  # the same grant again: listed once
        ]
    )
    assert grants.describe() == {
        "s-2": [{"tool": "fs.read", "path": "/b", "request_id": "r-3", "granted_by": "operator:alice"}],
        "session-1": [
            {"tool": "fs.list", "path": "/a", "request_id": "r-2", "granted_by": "operator:alice"},
            {"tool": "fs.read", "path": "/z", "request_id": "r-1", "granted_by": "operator:alice"},
        ],
    }
    assert len(grants) == 3


def asked(**fields: str) -> GrantRequest:
    values = {
        "session_id": "session-1",
        "tool": "fs.read",
        "path": REPORT,
        "request_id": "ask-1",
        "answer": "授权并重试",
        "responder_kind": "operator",
    }
    return GrantRequest(**(values | fields))


def test_an_authorising_answer_grants_the_normalised_absolute_path() -> None:
    assert judge_grant(asked(path="/home/alice/./reports//q3.txt"), SANDBOX) == REPORT
    assert judge_grant(asked(path="../exports"), SANDBOX) == "/srv/overseer/exports"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"tool": "fs.write"}, "only reads"),
        ({"tool": "shell.run"}, "only reads"),
        ({"tool": "email.send"}, "only reads"),
        ({"responder_kind": "agent"}, "an agent cannot grant"),
        ({"answer": "取消"}, "does not authorise"),
        ({"answer": "不好"}, "does not authorise"),
        ({"path": "/"}, "not a path that can be granted"),
        ({"path": "/tmp/\x00x"}, "not a path that can be granted"),
    ],
)
def test_a_grant_is_refused_for_a_write_an_agent_a_refusal_or_the_whole_file_system(
    fields: dict[str, str], reason: str
) -> None:
    with pytest.raises(GrantRefused, match=reason):
        judge_grant(asked(**fields), SANDBOX)
