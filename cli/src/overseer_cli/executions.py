"""``overseer executions``: what happened, newest first: every execution with its session, tool, state and
outcome, filtered by session, state, tool and age, a page at a time (``GET /v1/executions``).

Ids are printed whole (they fold onto a second line in a narrow terminal, never cut), so any of them can
be pasted into ``overseer timeline`` or ``overseer approvals approve``. Mount with :func:`mount`.
"""

from __future__ import annotations

import re
import time
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from overseer_cli.client import CliError, Gateway, console, friendly, resolve
from overseer_cli.control_commands import AsJson, Token, Url
from overseer_cli.render import clock, status_text

SINCE = re.compile(r"^(?P<amount>\d+(?:\.\d+)?)(?P<unit>[smhd]?)$")
UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
STATES = ("pending", "running", "waiting", "completed", "failed", "rejected", "cancelled")


def since_timestamp(text: str, now: float) -> float:
    """``10m``, ``2h``, ``3d`` ago (or ``30s``), or a Unix timestamp (a bare number above a day's seconds)."""
    found = SINCE.match(text.strip())
    if found is None:
        raise CliError(f"--since {text!r}: a duration such as 30s, 10m, 2h or 3d, or a Unix timestamp")
    amount, unit = float(found["amount"]), found["unit"]
    if not unit and amount > UNIT_SECONDS["d"]:
        return amount
    return now - amount * UNIT_SECONDS[unit]


WIDE = 120  # below this many columns the table keeps what fits: id, state, tool, session


def executions_table(page: dict[str, Any], width: int) -> Table:
    """The page as a table ``width`` columns wide: every column when it fits, else the id (whole), the
    state, the tool and the session (``--json`` has the rest)."""
    items = page.get("items", [])
    more = " (more: --cursor … or --all)" if page.get("next") else ""
    table = Table(title=f"{len(items)} execution{'s' if len(items) != 1 else ''}, newest first{more}")
    wide = width >= WIDE
    columns = ("execution", "state", "tool", "session", *(("what", "proposed", "outcome") if wide else ()))
    for column in columns:
        table.add_column(column, overflow="fold", min_width=36 if column == "execution" else None)
    for item in items:
        row: list[Any] = [
            item["execution_id"],
            status_text(item.get("status")),
            item.get("tool") or "—",
            item["session_id"],
        ]
        if wide:
            row += [
                item.get("action_summary") or "",
                clock(item.get("created_at")),
                item.get("error_message") or item.get("result") or "",
            ]
        table.add_row(*row)
    return table


def mount(app: typer.Typer) -> None:
    @app.command()
    @friendly
    def executions(
        session: Annotated[str | None, typer.Option(help="only this session's")] = None,
        status: Annotated[
            str | None, typer.Option(help=f"only those in this state now: {', '.join(STATES)}")
        ] = None,
        tool: Annotated[str | None, typer.Option(help="only calls of this tool, e.g. email.send")] = None,
        since: Annotated[
            str | None, typer.Option(help="proposed at most this long ago: 30s, 10m, 2h, 3d")
        ] = None,
        limit: Annotated[int, typer.Option(help="at most this many (per page)")] = 50,
        cursor: Annotated[
            str | None, typer.Option(help="continue after a previous page (its `next`)")
        ] = None,
        every: Annotated[bool, typer.Option("--all", help="every page, not only the first")] = False,
        url: Url = None,
        token: Token = None,
        as_json: AsJson = False,
    ) -> None:
        """What happened: every execution, newest first, with its session, tool, state and outcome."""
        params: dict[str, Any] = {"limit": limit}
        for name, value in (("session", session), ("status", status), ("tool", tool), ("cursor", cursor)):
            if value is not None:
                params[name] = value
        if since is not None:
            params["since"] = since_timestamp(since, time.time())
        with Gateway(resolve(url, token, "viewer")) as gateway:
            page = gateway.get("/v1/executions", params=params)
            items = list(page["items"])
            while every and page.get("next"):
                page = gateway.get("/v1/executions", params=params | {"cursor": page["next"]})
                items += page["items"]
        shown = {"items": items, "next": None if every else page.get("next")}
        if as_json:
            typer.echo(orjson.dumps(shown).decode())
        else:
            console.print(executions_table(shown, console.width))
