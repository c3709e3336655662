"""PerceptionBus records and counts; adaptive escalation moves only the user layer, within bounds."""

from __future__ import annotations

from overseer_firewall.domain.adaptive import Adaptation, adapt
from overseer_firewall.domain.levels import Level
from overseer_firewall.domain.perception import OutcomeClass, PerceptionBus, classify_result
from overseer_firewall.domain.policy import PolicyStore
from tests.unit.firewall.fw_kernel import admin_from, default_admin


def decide(
    bus: PerceptionBus,
    store: PolicyStore,
    tool: str,
    approved: bool,
    latency_ms: float = 5_000.0,
    approver: str = "operator:alice",
) -> Adaptation:
    bus.record_approval(tool, approved, latency_ms, approver)
    spec = store.catalogue.get(tool)
    return adapt(
        tool=tool,
        approved=approved,
        latency_ms=latency_ms,
        approver=approver,
        tool_stats=bus.tool_stats(tool),
        approver_stats=bus.approver_stats(approver),
        policy=store,
        irreversible=bool(spec and spec.irreversible),
    )


def apply(store: PolicyStore, adaptation: Adaptation) -> PolicyStore:
    for change in adaptation.changes:
        store = store.with_user_change(
            tool=change.tool,
            before=change.before,
            after=change.after,
            trigger=change.trigger,
            hint=change.hint,
        )
    return store


def effective(store: PolicyStore, tool: str) -> Level:
    return store.judge(tool, store.catalogue.get(tool), {"path": "a", "content": ""}).level


def test_the_bus_counts_approvals_rejections_and_latency() -> None:
    bus = PerceptionBus()
    bus.record_approval("fs.write", True, 1000.0, "operator:alice")
    bus.record_approval("fs.write", False, 3000.0, "operator:alice")
    bus.record_approval("fs.write", False, None, "operator:alice")
    stats = bus.stats().tool("fs.write")
    assert (stats.approvals, stats.rejections, stats.consecutive_rejections, stats.consecutive_approvals) == (
        1,
        2,
        2,
        0,
    )
    assert stats.mean_latency_ms == 2000.0
    assert stats.approval_rate == 1 / 3


def test_results_are_classified_and_repeats_become_stagnation_signals() -> None:
    assert classify_result("completed", "42 lines") is OutcomeClass.SUCCESS
    assert classify_result("completed", "") is OutcomeClass.IRRELEVANT
    assert classify_result("completed", "output truncated at 1 MB") is OutcomeClass.PARTIAL
    assert classify_result("failed", None, "boom") is OutcomeClass.FAILURE
    assert classify_result("cancelled", None) is OutcomeClass.IRRELEVANT
    bus = PerceptionBus()
    assert not bus.record_outcome("s", "fs.list", OutcomeClass.SUCCESS, "a.txt")
    assert bus.record_outcome("s", "fs.list", OutcomeClass.SUCCESS, "a.txt")
    assert bus.stagnation("s")[0] == 1
    assert bus.stats().tool("fs.list").repeats == 1
    bus.record_human_intervention("s")
    assert bus.stagnation("s") == (0, ())


def test_three_consecutive_rejections_escalate_to_approve_with_an_avoidance_hint() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    assert decide(bus, store, "fs.write", False).changes == ()
    assert decide(bus, store, "fs.write", False).changes == ()
    third = decide(bus, store, "fs.write", False)
    assert [(c.tool, c.before, c.after) for c in third.changes] == [("fs.write", None, Level.APPROVE)]
    assert third.changes[0].trigger == "3 consecutive rejections"
    assert [h.kind for h in third.hints] == ["avoid"]
    store = apply(store, third)
    assert effective(store, "fs.write") is Level.APPROVE


def test_an_approval_breaks_the_rejection_streak() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    for approved in (False, False, True, False, False):
        assert decide(bus, store, "fs.write", approved).changes == ()


def test_consistent_approvals_relax_an_escalated_tool_back_to_its_previous_level() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    for _ in range(3):
        store = apply(store, decide(bus, store, "fs.write", False))
    assert effective(store, "fs.write") is Level.APPROVE
    for _ in range(4):
        assert decide(bus, store, "fs.write", True).changes == ()
    fifth = decide(bus, store, "fs.write", True)
    assert [(c.before, c.after, c.trigger) for c in fifth.changes] == [
        (Level.APPROVE, None, "5 consecutive approvals")
    ]
    store = apply(store, fifth)
    assert effective(store, "fs.write") is Level.NOTIFY


def test_relaxing_never_goes_below_the_admin_floor() -> None:
    bus = PerceptionBus()
    store = PolicyStore(admin_from('[defaults]\n"fs.write" = "CONFIRM"\n'))
    store = store.with_user_change(tool="fs.write", before=None, after=Level.AUTO, trigger="a")
    store = store.with_user_change(tool="fs.write", before=Level.AUTO, after=Level.APPROVE, trigger="b")
    for _ in range(5):
        store = apply(store, decide(bus, store, "fs.write", True))
    assert "fs.write" not in store.user.levels
    assert effective(store, "fs.write") is Level.CONFIRM


def test_an_irreversible_tool_is_never_relaxed() -> None:
    bus, store = PerceptionBus(), PolicyStore(admin_from('[defaults]\n"email.send" = "CONFIRM"\n'))
    for _ in range(3):
        store = apply(store, decide(bus, store, "email.send", False))
    assert store.user.level("email.send") is Level.APPROVE
    for _ in range(20):
        assert decide(bus, store, "email.send", True).changes == ()
    assert store.user.level("email.send") is Level.APPROVE


def test_a_slow_answer_yields_an_unsure_hint() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    adaptation = decide(bus, store, "fs.write", True, latency_ms=45_000.0)
    assert [h.kind for h in adaptation.hints] == ["unsure"]
    assert "unsure" in adaptation.hints[0].message


def test_rubber_stamping_raises_an_alert_every_k_fast_approvals() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    alerts = [decide(bus, store, f"tool.{i}", True, latency_ms=300.0).alerts for i in range(10)]
    assert [i for i, a in enumerate(alerts) if a] == [4, 9]
    assert alerts[4][0].kind == "rubber_stamping"


def test_one_careful_approval_resets_the_rubber_stamp_count() -> None:
    bus, store = PerceptionBus(), PolicyStore(default_admin())
    latencies = [300.0] * 4 + [9_000.0] + [300.0] * 4
    assert not any(decide(bus, store, "fs.write", True, latency_ms=ms).alerts for ms in latencies)
