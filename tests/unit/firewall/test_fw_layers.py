"""The five layers, each on its own: L1 parameters, L2 loops, L3 permission, L4 sandbox, L5 breaker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from overseer_firewall.adapters.filesystem import RealPathResolver
from overseer_firewall.domain.engine import FirewallEngine
from overseer_firewall.domain.levels import Decision, Level
from overseer_firewall.domain.model import L1, L2, L3, L4, L5, Evaluation, Proposal
from overseer_firewall.domain.modes import parse_mode
from overseer_firewall.domain.paths import LexicalResolver
from overseer_firewall.domain.policy import PolicyStore
from overseer_firewall.domain.tools import PathAccess, PathArg, ToolCatalogue, ToolSpec
from tests.unit.firewall.fw_kernel import CWD, SANDBOX, admin_from, default_admin, engine_for, proposal


def run_layer(engine: FirewallEngine, index: int, p: Proposal) -> Evaluation:
    """Run layers 1..index (earlier layers prepare the arguments) and return the evaluation."""
    spec = engine.policy.catalogue.get(p.tool)
    ev = Evaluation(p, spec, p.tool or "")
    for layer in engine.layers[:index]:
        layer.run(ev, engine.kernel)
    return ev


def finding(ev: Evaluation, layer: str) -> tuple[str, str]:
    """The strongest outcome of ``layer`` and all its messages."""
    found = [f for f in ev.findings if f.layer == layer]
    assert found, f"no {layer} finding in {ev.findings}"
    for outcome in ("deny", "hold", "warn", "rewrite", "pass"):
        if any(f.outcome == outcome for f in found):
            return outcome, " | ".join(f.message for f in found)
    raise AssertionError(found)


# ----------------------------------------------------------------------------------------- L1 --
def test_l1_strips_unknown_parameters_with_a_warning(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 1, proposal("fs.read", {"path": "a.txt", "mood": "cheerful", "x": 1}))
    assert ev.args == {"path": "a.txt"}
    outcome, message = finding(ev, L1)
    assert outcome == "warn"
    assert "mood" in message
    assert "x" in message
    assert not ev.denied


def test_l1_denies_a_missing_required_parameter_with_the_reason(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 1, proposal("email.send", {"to": "bob@example.com"}))
    assert ev.denied
    outcome, message = finding(ev, L1)
    assert outcome == "deny"
    assert "body" in message
    assert "subject" in message


def test_l1_denies_an_invalid_parameter(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 1, proposal("fs.read", {"path": "notes.md", "max_bytes": 0}))
    assert ev.denied
    assert "max_bytes" in finding(ev, L1)[1]


def test_l1_holds_an_unknown_tool_at_confirm(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 1, proposal("mcp.mystery", {"anything": True}))
    assert not ev.denied
    assert ev.level is Level.CONFIRM
    assert finding(ev, L1)[0] == "hold"


# ----------------------------------------------------------------------------------------- L2 --
def observe_all(engine: FirewallEngine, proposals: list[Proposal]) -> None:
    for p in proposals:
        engine.observe(p)


def test_l2_holds_the_same_call_repeated_n_times_in_the_window(engine: FirewallEngine) -> None:
    observe_all(engine, [proposal("fs.read", {"path": "a"}, occurred_at=t) for t in (1.0, 2.0)])
    ev = run_layer(engine, 2, proposal("fs.read", {"path": "a"}, occurred_at=3.0))
    outcome, message = finding(ev, L2)
    assert outcome == "hold"
    assert "repeat" in message
    assert ev.level is Level.CONFIRM


def test_l2_forgets_calls_older_than_the_window(engine: FirewallEngine) -> None:
    observe_all(engine, [proposal("fs.read", {"path": "a"}, occurred_at=t) for t in (1.0, 2.0)])
    ev = run_layer(engine, 2, proposal("fs.read", {"path": "a"}, occurred_at=500.0))
    assert finding(ev, L2)[0] == "pass"


def test_l2_holds_a_flood_of_one_tool(engine: FirewallEngine) -> None:
    observe_all(engine, [proposal("fs.read", {"path": f"f{i}"}, occurred_at=float(i)) for i in range(7)])
    ev = run_layer(engine, 2, proposal("fs.read", {"path": "f99"}, occurred_at=8.0))
    outcome, message = finding(ev, L2)
    assert outcome == "hold"
    assert "flood" in message


def test_l2_holds_abab_oscillation(engine: FirewallEngine) -> None:
    a, b = ("fs.read", {"path": "a"}), ("fs.list", {"path": "docs"})
    observe_all(
        engine, [proposal(*a, occurred_at=1.0), proposal(*b, occurred_at=2.0), proposal(*a, occurred_at=3.0)]
    )
    ev = run_layer(engine, 2, proposal(*b, occurred_at=4.0))
    outcome, message = finding(ev, L2)
    assert outcome == "hold"
    assert "oscillation" in message


def test_l2_counts_calls_per_session(engine: FirewallEngine) -> None:
    observe_all(
        engine, [proposal("fs.read", {"path": "a"}, session_id="other", occurred_at=t) for t in (1.0, 2.0)]
    )
    ev = run_layer(engine, 2, proposal("fs.read", {"path": "a"}, occurred_at=3.0))
    assert finding(ev, L2)[0] == "pass"


def test_l2_tightens_its_thresholds_when_confidence_is_low(engine: FirewallEngine) -> None:
    confident = [proposal("fs.read", {"path": "a"}, occurred_at=1.0, confidence=0.9)]
    observe_all(engine, confident)
    assert (
        finding(
            run_layer(engine, 2, proposal("fs.read", {"path": "a"}, occurred_at=2.0, confidence=0.9)), L2
        )[0]
        == "pass"
    )
    unsure = engine_for()
    observe_all(unsure, [proposal("fs.read", {"path": "a"}, occurred_at=1.0, confidence=0.2)])
    ev = run_layer(unsure, 2, proposal("fs.read", {"path": "a"}, occurred_at=2.0, confidence=0.2))
    outcome, message = finding(ev, L2)
    assert outcome == "hold"
    assert "tightened" in message


# ----------------------------------------------------------------------------------------- L3 --
def test_l3_applies_the_policy_level(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 3, proposal("email.send", {"to": "a@b.c", "subject": "s", "body": "b"}))
    outcome, message = finding(ev, L3)
    assert (outcome, ev.level) == ("hold", Level.APPROVE)
    assert "admin APPROVE" in message


def test_l3_denies_on_an_admin_deny_rule(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 3, proposal("shell.run", {"command": "sudo rm -rf /"}))
    assert ev.denied
    assert "destructive shell commands" in finding(ev, L3)[1]


def test_l3_runs_a_delegated_agent_inside_its_grant_at_auto(engine: FirewallEngine) -> None:
    engine.modes.set("agent:helper", parse_mode("delegated", {"tools": ["fs.*"], "max_steps": 2}, now=0.0))
    p = proposal("fs.write", {"path": "a.md", "content": "x"}, proposer="agent:helper", occurred_at=1.0)
    ev = run_layer(engine, 3, p)
    assert ev.level is Level.AUTO
    assert finding(ev, L3)[0] == "pass"


def test_l3_holds_a_delegated_agent_outside_its_grant(engine: FirewallEngine) -> None:
    engine.modes.set("agent:helper", parse_mode("delegated", {"tools": ["fs.read"]}, now=0.0))
    p = proposal("fs.write", {"path": "a.md", "content": "x"}, proposer="agent:helper")
    ev = run_layer(engine, 3, p)
    outcome, message = finding(ev, L3)
    assert outcome == "hold"
    assert "outside the grant" in message


def test_l3_grant_budget_of_steps_and_time_is_enforced(engine: FirewallEngine) -> None:
    engine.modes.set(
        "agent:helper", parse_mode("delegated", {"tools": ["fs.*"], "max_steps": 1, "seconds": 60}, now=0.0)
    )
    first = proposal("fs.read", {"path": "a"}, proposer="agent:helper", occurred_at=1.0)
    assert run_layer(engine, 3, first).level is Level.AUTO
    engine.observe(first)
    second = proposal("fs.write", {"path": "b", "content": ""}, proposer="agent:helper", occurred_at=2.0)
    assert "used its 1 steps" in finding(run_layer(engine, 3, second), L3)[1]
    fresh = engine_for()
    fresh.modes.set("agent:helper", parse_mode("delegated", {"tools": ["fs.*"], "seconds": 60}, now=0.0))
    late = proposal("fs.write", {"path": "b", "content": ""}, proposer="agent:helper", occurred_at=61.0)
    assert "expired" in finding(run_layer(fresh, 3, late), L3)[1]


def test_l3_grants_an_irreversible_tool_only_by_its_exact_name(engine: FirewallEngine) -> None:
    mail = {"to": "a@b.c", "subject": "s", "body": "b"}
    engine.modes.set("agent:globbed", parse_mode("delegated", {"tools": ["*"]}, now=0.0))
    engine.modes.set("agent:named", parse_mode("delegated", {"tools": ["email.send"]}, now=0.0))
    assert run_layer(engine, 3, proposal("email.send", mail, proposer="agent:globbed")).level is Level.APPROVE
    assert run_layer(engine, 3, proposal("email.send", mail, proposer="agent:named")).level is Level.AUTO


# ----------------------------------------------------------------------------------------- L4 --
class SymlinkWorld(LexicalResolver):
    """A fake file system: the given symlinks (path → target), everything else plain."""

    def __init__(self, links: dict[str, str]) -> None:
        self.links = links

    def realpath(self, path: str) -> str:
        for link, target in self.links.items():
            if path == link or path.startswith(link + "/"):
                return super().realpath(target + path[len(link) :])
        return super().realpath(path)


def test_l4_rewrites_write_paths_into_the_sandbox(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 4, proposal("fs.write", {"path": "./notes/../report.md", "content": "x"}))
    assert ev.args["path"] == "report.md"
    assert finding(ev, L4)[0] == "rewrite"


def test_l4_rewrites_an_absolute_path_inside_the_sandbox_to_a_relative_one(engine: FirewallEngine) -> None:
    ev = run_layer(engine, 4, proposal("fs.write", {"path": f"{SANDBOX}/out/r.md", "content": "x"}))
    assert ev.args["path"] == "out/r.md"
    assert not ev.denied


def test_l4_writes_land_in_the_output_directory() -> None:
    engine = engine_for(admin_from('[sandbox]\noutput_dir = "output"\n'))
    ev = run_layer(engine, 4, proposal("fs.write", {"path": "r.md", "content": "x"}))
    assert ev.args["path"] == "output/r.md"


@pytest.mark.parametrize(
    "path", ["../escape.txt", "notes/../../escape.txt", "/etc/cron.d/job", f"{SANDBOX}/../x"]
)
def test_l4_refuses_writes_that_leave_the_sandbox(engine: FirewallEngine, path: str) -> None:
    ev = run_layer(engine, 4, proposal("fs.write", {"path": path, "content": "x"}))
    assert ev.denied
    assert finding(ev, L4)[0] == "deny"


def test_l4_refuses_a_write_through_a_symlink_that_leads_out() -> None:
    engine = engine_for(resolver=SymlinkWorld({f"{SANDBOX}/link": "/etc"}))
    ev = run_layer(engine, 4, proposal("fs.write", {"path": "link/passwd", "content": "x"}))
    assert ev.denied
    assert "symlink" in finding(ev, L4)[1]


def test_l4_refuses_a_real_symlink_escape(tmp_path: Path) -> None:
    sandbox = tmp_path / "sandbox"
    (sandbox / "inside").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, sandbox / "inside" / "door")
    resolver = RealPathResolver([str(sandbox)])
    engine = FirewallEngine(
        PolicyStore(default_admin()),
        sandbox_root=str(sandbox),
        cwd=str(sandbox),
        home=str(tmp_path),
        resolver=resolver,
    )
    escape = run_layer(engine, 4, proposal("fs.write", {"path": "inside/door/x.txt", "content": "x"}))
    assert escape.denied
    assert "symlink" in finding(escape, L4)[1]
    fine = run_layer(engine, 4, proposal("fs.write", {"path": "inside/new/x.txt", "content": "x"}))
    assert not fine.denied
    assert fine.args["path"] == "inside/new/x.txt"


def test_l4_reads_inside_readable_paths_pass_and_others_wait_for_confirm(engine: FirewallEngine) -> None:
    inside = run_layer(engine, 4, proposal("fs.read", {"path": "notes/a.md"}))
    assert inside.level is Level.AUTO
    assert inside.args["path"] == "notes/a.md"
    cwd_file = run_layer(engine, 4, proposal("fs.read", {"path": f"{CWD}/README.md"}))
    assert cwd_file.level is Level.AUTO
    assert cwd_file.args["path"] == f"{CWD}/README.md"
    outside = run_layer(engine, 4, proposal("fs.read", {"path": "/etc/passwd"}))
    assert outside.level is Level.CONFIRM
    assert not outside.denied
    climbing = run_layer(engine, 4, proposal("fs.read", {"path": "../../../etc/passwd"}))
    assert climbing.level is Level.CONFIRM
    assert "outside the readable paths" in finding(climbing, L4)[1]


def test_l4_a_read_through_a_symlink_out_of_the_readable_paths_waits_for_confirm() -> None:
    engine = engine_for(resolver=SymlinkWorld({f"{SANDBOX}/etc": "/etc"}))
    ev = run_layer(engine, 4, proposal("fs.read", {"path": "etc/shadow"}))
    assert ev.level is Level.CONFIRM
    assert "symlink" in finding(ev, L4)[1]


def test_l4_keeps_a_working_directory_inside_the_sandbox() -> None:
    runner = ToolSpec(
        "job.run",
        {"type": "object", "properties": {"cwd": {"type": "string"}}},
        default_level=Level.AUTO,
        path_args=(PathArg("cwd", PathAccess.CWD, default="."),),
    )
    store = PolicyStore(default_admin(), base_catalogue=ToolCatalogue([runner]))
    engine = FirewallEngine(store, sandbox_root=SANDBOX, cwd=CWD, home="/srv/overseer")
    defaulted = run_layer(engine, 4, proposal("job.run", {}))
    assert defaulted.args == {"cwd": "."}
    assert not defaulted.denied
    assert run_layer(engine, 4, proposal("job.run", {"cwd": "../.."})).denied


def test_l4_refuses_a_path_with_a_nul_byte(engine: FirewallEngine) -> None:
    assert run_layer(engine, 4, proposal("fs.write", {"path": "a\x00b", "content": ""})).denied


# ----------------------------------------------------------------------------------------- L5 --
def test_l5_holds_after_k_consecutive_low_confidence_proposals(engine: FirewallEngine) -> None:
    observe_all(
        engine,
        [proposal("fs.read", {"path": f"p{i}"}, confidence=0.2, occurred_at=float(i)) for i in range(2)],
    )
    ev = run_layer(engine, 5, proposal("fs.read", {"path": "p9"}, confidence=0.3, occurred_at=5.0))
    outcome, message = finding(ev, L5)
    assert outcome == "hold"
    assert "3 consecutive proposals below confidence 0.4" in message


def test_l5_a_confident_proposal_breaks_the_streak(engine: FirewallEngine) -> None:
    confidences = [0.2, 0.2, 0.9, 0.2]
    observe_all(
        engine,
        [
            proposal("fs.read", {"path": f"p{i}"}, confidence=c, occurred_at=float(i))
            for i, c in enumerate(confidences)
        ],
    )
    ev = run_layer(engine, 5, proposal("fs.read", {"path": "p9"}, confidence=0.2, occurred_at=9.0))
    assert finding(ev, L5)[0] == "pass"


def test_l5_holds_on_stagnation_with_the_reason(engine: FirewallEngine) -> None:
    engine.bus.record_stagnation("session-1", "the reflection made no progress")
    ev = run_layer(engine, 5, proposal("fs.read", {"path": "x"}, stagnation="same plan as before"))
    outcome, message = finding(ev, L5)
    assert outcome == "hold"
    assert "stagnation" in message
    assert "same plan as before" in message


def test_layers_pass_a_plain_read(engine: FirewallEngine) -> None:
    verdict = engine.evaluate(proposal("fs.read", {"path": "notes/today.md"}))
    assert verdict.decision is Decision.ALLOW
    assert [(f.layer, f.outcome) for f in verdict.findings] == [
        (L1, "pass"),
        (L2, "pass"),
        (L3, "pass"),
        (L4, "pass"),
        (L5, "pass"),
    ]


@pytest.mark.parametrize(("count", "shares"), [(1, [5]), (2, [3, 2]), (3, [2, 2, 1]), (8, [1] * 5 + [0] * 3)])
def test_replicas_share_out_a_grants_steps_and_never_allow_more_than_the_grant(
    count: int, shares: list[int]
) -> None:
    allowed = []
    for index in range(count):
        replica = engine_for()
        replica.modes.share_out(index, count)
        replica.modes.set(
            "agent:helper", parse_mode("delegated", {"tools": ["fs.*"], "max_steps": 5}, now=0.0)
        )
        runs = 0
        for n in range(6):
            step = proposal("fs.read", {"path": str(n)}, proposer="agent:helper", occurred_at=1.0 + n)
            if run_layer(replica, 3, step).level is not Level.AUTO:
                assert "used its 5 steps" in finding(run_layer(replica, 3, step), L3)[1]
                break
            replica.observe(step)
            runs += 1
        allowed.append(runs)
    assert allowed == shares
    assert sum(allowed) == 5
