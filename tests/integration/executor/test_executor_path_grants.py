"""The executor's second wall honours exactly a session's path grants: the file tools on a real file system,
the grants' read model on real SQLite, and the executor on a real nats-server."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from overseer_events.catalogue import PathGranted, Principal
from overseer_events.envelope import new_event
from overseer_executor.adapters.contracts_sql import SqliteContractRepository
from overseer_executor.adapters.path_grants import PathGrantsProjection, SqliteGrantedPaths
from overseer_executor.adapters.tools.fs import FsTools
from overseer_executor.bootstrap import ExecutorService
from overseer_executor.domain.tools import ToolCall, ToolError
from overseer_runtime.main import rebuild
from overseer_runtime.runtime import Runtime
from overseer_runtime.store import EventStore
from overseer_runtime.testing import Stack, eventually
from tests.integration.executor.executor_support import RunExecutor, proposed, verdict

ALICE = Principal(kind="operator", id="alice")


def call(name: str, session_id: str = "s-1", **args: object) -> ToolCall:
    return ToolCall(name, dict(args), execution_id="exec-t", session_id=session_id)


def granted(session_id: str, tool: str, path: Path | str, request_id: str = "ask-1") -> PathGranted:
    return PathGranted(
        session_id=session_id, tool=tool, path=str(path), request_id=request_id, granted_by=ALICE
    )


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A directory outside the sandbox: reports/q3.txt, reports/2024/q4.txt, and a sibling reports-private."""
    root = tmp_path / "reports"
    (root / "2024").mkdir(parents=True)
    (root / "q3.txt").write_text("Q3: up 4%")
    (root / "2024" / "q4.txt").write_text("Q4: flat")
    (tmp_path / "reports-private").mkdir()
    (tmp_path / "reports-private" / "salaries.txt").write_text("secret")
    return root


def tools_with(tmp_path: Path, grants: dict[str, list[tuple[str, str]]]) -> FsTools:
    return FsTools(tmp_path / "sandbox", granted=lambda session: grants.get(session, []))


# -- the file tools ------------------------------------------------------------------------------------
async def test_a_granted_file_is_read_in_its_session_only(tmp_path: Path, reports: Path) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.read", str(reports / "q3.txt"))]})
    assert await fs.execute(call("fs.read", path=str(reports / "q3.txt"))) == "Q3: up 4%"
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", "s-2", path=str(reports / "q3.txt")))


async def test_a_granted_directory_is_read_and_listed_below_it_and_nothing_beside_it(
    tmp_path: Path, reports: Path
) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.read", str(reports))]})
    assert await fs.execute(call("fs.read", path=str(reports / "2024" / "q4.txt"))) == "Q4: flat"
    listing = orjson.loads(await fs.execute(call("fs.list", path=str(reports))))
    assert [e["name"] for e in listing] == ["2024", "q3.txt"]
    for outside in (
        tmp_path / "reports-private" / "salaries.txt",
        f"{reports}/../reports-private/salaries.txt",
    ):
        with pytest.raises(ToolError, match="outside the sandbox"):
            await fs.execute(call("fs.read", path=str(outside)))


async def test_a_list_grant_lists_but_does_not_read(tmp_path: Path, reports: Path) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.list", str(reports))]})
    assert orjson.loads(await fs.execute(call("fs.list", path=str(reports))))
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path=str(reports / "q3.txt")))


async def test_a_grant_never_lets_a_write_out_of_the_sandbox(tmp_path: Path, reports: Path) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.read", str(reports)), ("fs.write", str(reports))]})
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.write", path=str(reports / "q3.txt"), content="overwritten"))
    assert (reports / "q3.txt").read_text() == "Q3: up 4%"


async def test_relative_paths_still_resolve_in_the_sandbox(tmp_path: Path, reports: Path) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.read", str(reports))]})
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path="../reports/q3.txt"))


async def test_a_symlink_below_a_granted_directory_must_not_lead_out_of_it(
    tmp_path: Path, reports: Path
) -> None:
    os.symlink(tmp_path / "reports-private", reports / "door")
    fs = tools_with(tmp_path, {"s-1": [("fs.read", str(reports))]})
    with pytest.raises(ToolError, match="symlink"):
        await fs.execute(call("fs.read", path=str(reports / "door" / "salaries.txt")))


@pytest.mark.parametrize("root", ["/", "reports", ""])
async def test_a_grant_of_the_whole_file_system_or_of_no_absolute_path_is_ignored(
    tmp_path: Path, reports: Path, root: str
) -> None:
    fs = tools_with(tmp_path, {"s-1": [("fs.read", root)]})
    with pytest.raises(ToolError, match="outside the sandbox"):
        await fs.execute(call("fs.read", path=str(reports / "q3.txt")))


# -- the read model ------------------------------------------------------------------------------------
def test_the_grants_read_model_keeps_each_request_once_by_session(tmp_path: Path) -> None:
    store = EventStore(tmp_path / "executor.db")
    projection = PathGrantsProjection()
    store.create_projections([projection])
    with store.transaction() as conn:
        for version, data in enumerate(
            [
                granted("s-1", "fs.read", "/home/alice/q3.txt", "ask-1"),
                granted("s-1", "fs.read", "/home/alice/other.txt", "ask-1"),  # the same request again
                granted("s-2", "fs.list", "/srv/shared", "ask-2"),
            ],
            start=1,
        ):
            projection.apply(
                conn, new_event(data, aggregate_id="grant", aggregate_version=version, actor="firewall")
            )
    paths = SqliteGrantedPaths(store.conn)
    assert paths("s-1") == [("fs.read", "/home/alice/q3.txt")]
    assert paths("s-2") == [("fs.list", "/srv/shared")]
    assert paths("s-3") == []
    store.close()


# -- the executor on a real nats-server ----------------------------------------------------------------
def status_and_outcome(rt: Runtime, execution_id: str) -> tuple[str, str | None] | None:
    contract = SqliteContractRepository(rt.store.conn).get(execution_id)
    if contract is None or contract.status.value not in ("completed", "failed"):
        return None
    return contract.status.value, contract.result or contract.error_message


async def test_the_executor_reads_what_the_firewall_granted_the_session_and_nothing_more(
    stack: Stack, run_executor: RunExecutor, reports: Path
) -> None:
    target = {"path": str(reports / "q3.txt")}
    async with run_executor() as rt:
        grant = new_event(
            granted("s-1", "fs.read", reports, "ask-1"),
            aggregate_id="grant:ask-1",
            aggregate_version=1,
            actor="firewall",
        )
        await stack.publish_as("firewall", grant)
        await eventually(lambda: SqliteGrantedPaths(rt.store.conn)("s-1"))
        for execution_id, session_id in (("read-s1", "s-1"), ("read-s2", "s-2")):
            await stack.publish_as(
                "reasoning", proposed(execution_id, "fs.read", target, session_id=session_id)
            )
            await stack.publish_as(
                "firewall", verdict(execution_id, "allow", target, tool="fs.read", session_id=session_id)
            )
        done = await eventually(lambda: status_and_outcome(rt, "read-s1"))
        assert done[0] == "completed"
        assert done[1] == "Q3: up 4%"
        refused = await eventually(lambda: status_and_outcome(rt, "read-s2"))
        assert refused[0] == "failed"
        assert "outside the sandbox" in (refused[1] or "")

    # The grant is an event: a rebuilt read model holds it again.
    settings = stack.settings()
    rebuild(ExecutorService(), settings)
    rebuilt = EventStore(settings.db_path("executor"))
    assert SqliteGrantedPaths(rebuilt.conn)("s-1") == [("fs.read", str(reports))]
    rebuilt.close()
