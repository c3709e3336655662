"""Partitions: which replica an event belongs to, what each replica is called, how replies are combined."""

from __future__ import annotations

from typing import Any

import pytest

from overseer_events.catalogue import OutcomeReported, Principal, SessionCancelRequested, ToolsAnnounced
from overseer_events.subjects import Subjects
from overseer_executor.entrypoints.events import SUBSCRIPTIONS, partition_key
from overseer_runtime.config import ConfigurationError, load_settings
from overseer_runtime.partitions import Partition, partition_of
from overseer_runtime.permissions import durable_names, readable_durables, service_permissions
from overseer_runtime.provisioning import Subscription, consumer_plan
from overseer_runtime.rpc import RpcError, combine
from tests.unit.executor.executor_builders import proposal

ALICE = Principal(kind="operator", id="alice")


def test_a_key_belongs_to_the_same_partition_in_every_process_and_keys_spread_over_all() -> None:
    # CRC-32 (2311827951 and 397354060), not Python's hash(), which each process salts differently.
    assert partition_of("session-abc", 2) == 1
    assert partition_of("session-abd", 2) == 0
    spread = [partition_of(f"session-{n}", 4) for n in range(2000)]
    assert all(400 <= spread.count(index) <= 600 for index in range(4))
    assert partition_of("anything", 1) == 0


def test_a_partition_owns_its_keys_and_every_event_without_one() -> None:
    one, other = Partition(1, 2), Partition(0, 2)
    assert one.owns("session-abc")
    assert not other.owns("session-abc")
    assert one.owns(None)
    assert other.owns(None)
    assert Partition().alone


@pytest.mark.parametrize(("index", "count"), [(2, 2), (-1, 2), (0, 0), (0, 9)])
def test_a_partition_outside_its_count_is_refused(index: int, count: int) -> None:
    with pytest.raises(ValueError, match="partition"):
        Partition(index, count)


def test_partition_zero_keeps_the_names_of_a_service_running_alone() -> None:
    assert durable_names("executor", 0) == ("executor", "executor_lingered", "executor_told")
    assert durable_names("executor", 3) == ("executor_p3", "executor_p3_lingered", "executor_p3_told")
    plans = consumer_plan("executor", SUBSCRIPTIONS, Subjects(), partition=Partition(1, 2))
    assert [(plan.durable, plan.joins) for plan in plans] == [("executor_p1", "executor")]
    assert [plan.joins for plan in consumer_plan("executor", SUBSCRIPTIONS, Subjects())] == [None]
    settings = load_settings(env={"OVERSEER_PARTITIONS__EXECUTOR": "2", "OVERSEER_PARTITIONS__INDEX": "1"})
    assert settings.db_path("executor").name == "executor.p1.db"
    assert settings.db_path("gateway").name == "gateway.db"  # the others run alone
    assert load_settings(env={}).db_path("executor").name == "executor.db"


def test_what_replicas_tell_each_other_is_read_only_while_the_service_runs_as_several() -> None:
    told = (
        Subscription(owner="gateway", types=("execution.proposed",)),
        Subscription(owner="firewall", types=("policy.*",), linger=0.02, replicas_only=True),
    )
    alone = consumer_plan("firewall", told, Subjects())
    assert [plan.durable for plan in alone] == ["firewall"]
    split = consumer_plan("firewall", told, Subjects(), partition=Partition(0, 2))
    assert [(plan.durable, plan.filter_subjects) for plan in split] == [
        ("firewall", (Subjects().events_of("gateway", "execution.proposed"),)),
        ("firewall_told", (Subjects().events_of("firewall", "policy.*"),)),
    ]
    later = consumer_plan("firewall", told, Subjects(), partition=Partition(1, 2))
    assert [(plan.durable, plan.joins) for plan in later] == [
        ("firewall_p1", "firewall"),
        ("firewall_p1_told", None),
    ]


def test_only_a_partitioned_service_may_read_the_durables_of_its_other_partitions() -> None:
    assert "executor_p7_lingered" in readable_durables("executor")
    assert readable_durables("gateway") == ["gateway", "gateway_lingered"]
    publish = service_permissions("executor").publish
    assert "$JS.API.CONSUMER.MSG.NEXT.*.executor_p1" in publish
    assert not any("gateway" in rule for rule in publish if rule.startswith("$JS.API.CONSUMER"))


def test_a_partition_count_out_of_range_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"partitions\.executor"):
        load_settings(env={"OVERSEER_PARTITIONS__EXECUTOR": "9"})
    with pytest.raises(ValueError, match="partition 2 does not exist among 2"):
        load_settings(
            env={"OVERSEER_PARTITIONS__EXECUTOR": "2", "OVERSEER_PARTITIONS__INDEX": "2"}
        ).partition_of("executor")


def test_the_executor_partitions_its_events_by_session() -> None:
    assert partition_key(proposal("e-1", session_id="s-9")) == "s-9"
    assert partition_key(SessionCancelRequested(session_id="s-9", by=ALICE)) == "s-9"
    old_report = OutcomeReported(
        execution_id="e-1", status="completed", args_hash="h" * 64, reported_by=ALICE
    )
    assert partition_key(old_report) is None  # recorded before reports named their session: every partition's
    assert partition_key(ToolsAnnounced(tools=[])) is None


def ok(result: Any, partition: int) -> dict[str, Any]:
    return {"ok": True, "result": result, "partition": partition}


def refused(status: int, partition: int, detail: str = "no such execution") -> dict[str, Any]:
    return {"ok": False, "status": status, "detail": detail, "partition": partition}


def test_found_keeps_the_one_answer_that_is_not_a_404() -> None:
    assert combine(
        "found", "executor", "contract.get", {0: refused(404, 0), 1: ok({"id": "e"}, 1)}, 2, 1.0
    ) == {"id": "e"}
    with pytest.raises(RpcError) as conflict:  # the replica that holds it refuses: that is the answer
        combine(
            "found",
            "executor",
            "execution.cancel",
            {0: refused(404, 0), 1: refused(409, 1, "running")},
            2,
            1.0,
        )
    assert conflict.value.status == 409
    with pytest.raises(RpcError) as nowhere:
        combine("found", "executor", "contract.get", {0: refused(404, 0), 1: refused(404, 1)}, 2, 1.0)
    assert nowhere.value.status == 404


def test_a_silent_replica_is_never_taken_for_a_404_nor_left_out_of_a_list() -> None:
    with pytest.raises(RpcError) as silent:
        combine("found", "executor", "contract.get", {0: refused(404, 0)}, 2, 1.0)
    assert silent.value.status == 503
    assert "partition 1" in silent.value.detail
    with pytest.raises(RpcError) as partial:
        combine("merged", "executor", "approvals.pending", {1: ok([{"id": "b"}], 1)}, 2, 1.0)
    assert partial.value.status == 503
    assert "partition 0" in partial.value.detail
    with pytest.raises(RpcError) as none:
        combine("merged", "executor", "approvals.pending", {}, 2, 1.0)
    assert "not reachable" in none.value.detail


def test_a_replica_still_starting_neither_hides_the_answer_nor_is_taken_for_a_404() -> None:
    starting = refused(503, 1, "executor is starting")
    assert combine("found", "executor", "contract.get", {1: starting, 0: ok({"id": "e"}, 0)}, 2, 1.0) == {
        "id": "e"
    }
    with pytest.raises(RpcError) as unsure:
        combine("found", "executor", "contract.get", {0: refused(404, 0), 1: starting}, 2, 1.0)
    assert unsure.value.status == 503
    assert "partition 1: executor is starting" in unsure.value.detail
    with pytest.raises(RpcError) as invalid:  # a bad request is refused alike by every replica
        combine(
            "merged",
            "executor",
            "approvals.pending",
            {0: refused(422, 0, "status: bad"), 1: ok([], 1)},
            2,
            1.0,
        )
    assert invalid.value.status == 422


def test_merged_lists_every_replica_in_partition_order() -> None:
    answers = {1: ok([{"id": "b"}], 1), 0: ok([{"id": "a"}], 0)}
    assert combine("merged", "executor", "approvals.pending", answers, 2, 1.0) == [{"id": "a"}, {"id": "b"}]


def test_health_is_the_worst_replicas_with_each_replica_under_partitions() -> None:
    up = {"service": "executor", "status": "ok", "ready": True, "consumer_lag": 2, "relay_backlog": 1}
    both = combine(
        "health", "executor", "health", {0: ok(up, 0), 1: ok({**up, "consumer_lag": 3}, 1)}, 2, 1.0
    )
    assert (both["status"], both["ready"], both["consumer_lag"], both["relay_backlog"]) == ("ok", True, 5, 2)
    one = combine("health", "executor", "health", {0: ok(up, 0)}, 2, 1.0)
    assert (one["status"], one["ready"]) == ("down", False)
    assert one["partitions"]["1"]["error"] == "did not answer"


def test_each_is_every_answering_replicas_result_in_partition_order() -> None:
    answers = {1: ok({"exposition": "b"}, 1), 0: ok({"exposition": "a"}, 0)}
    assert combine("each", "executor", "metrics", answers, 2, 1.0) == [
        {"exposition": "a"},
        {"exposition": "b"},
    ]
    assert combine("each", "executor", "metrics", {1: answers[1]}, 2, 1.0) == [{"exposition": "b"}]
