"""``overseer co list | show | create | transition``: Cognitive Objects through the gateway's REST API.

Reading uses the viewer token, writing the operator token (``--token`` / ``OVERSEER_TOKEN`` win);
``--url`` / ``OVERSEER_URL`` select the gateway (see :mod:`overseer_cli.client`). ``--json`` prints
the gateway's answer as is. Mount with ``app.add_typer(co_app, name="co")``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from overseer_cli.client import Gateway, console, friendly, resolve

co_app = typer.Typer(
    name="co",
    help="Cognitive Objects: the long-lived things you track (list, show, create, transition).",
    no_args_is_help=True,
)

Url = Annotated[
    str | None, typer.Option("--url", help="the gateway (default: OVERSEER_URL, the local stack)")
]
Token = Annotated[
    str | None, typer.Option("--token", help="a bearer token (default: OVERSEER_TOKEN, tokens.json)")
]
AsJson = Annotated[bool, typer.Option("--json", help="print the raw JSON answer")]

STATUS_STYLE = {
    "emerging": "cyan",
    "active": "bold green",
    "waiting": "yellow",
    "blocked": "bold red",
    "stable": "blue",
    "archived": "bright_black",
}
TRIGGERS = "clarify, wait, resume, block, unblock, achieve, archive, reactivate"


def gateway(url: str | None, token: str | None, role: str) -> Gateway:
    return Gateway(resolve(url, token, role), timeout=30.0)


def status_text(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, "white"))


def when(ts: float | None) -> str:
    import time

    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def print_json(value: Any) -> None:
    console.print_json(json.dumps(value, ensure_ascii=False))


@co_app.command("list")
@friendly
def list_cos(
    status: Annotated[
        str | None, typer.Option(help="emerging, active, waiting, blocked, stable, archived")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="domain_tag, e.g. work")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="semantic_type, e.g. project")] = None,
    query: Annotated[str | None, typer.Option("--query", "-q", help="search title and description")] = None,
    active: Annotated[bool, typer.Option("--active", help="leave out archived objects")] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 100,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """The Cognitive Objects, most recently changed first."""
    params: dict[str, Any] = {"limit": limit}
    for key, value in (("status", status), ("domain", domain), ("type", type_), ("q", query)):
        if value:
            params[key] = value
    if active:
        params["active"] = "true"
    with gateway(url, token, "viewer") as gw:
        cos = gw.get("/v1/cos", params=params)
    if as_json:
        print_json(cos)
        return
    if not cos:
        console.print("no Cognitive Objects match")
        return
    table = Table(show_edge=False, header_style="bold")
    table.add_column("co_id", no_wrap=True, min_width=36)  # whole: it is what `show` and `transition` take
    table.add_column("status", no_wrap=True)
    table.add_column("title", overflow="fold")
    for column in ("type", "domain", "updated"):
        table.add_column(column)
    for co in cos:
        table.add_row(
            co["co_id"],
            status_text(co["status"]),
            co["title"],
            co.get("semantic_type") or "-",
            co.get("domain_tag") or "-",
            when(co.get("updated_at")),
        )
    console.print(table)


@co_app.command("show")
@friendly
def show_co(
    co_id: Annotated[str, typer.Argument(help="the CO's id")],
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """One Cognitive Object with its transitions, links and execution reports."""
    with gateway(url, token, "viewer") as gw:
        co = gw.get(f"/v1/cos/{co_id}")
    if as_json:
        print_json(co)
        return
    console.print(Panel(co_facts(co), title=f"{co['title']}  [dim]{co['co_id']}[/dim]", title_align="left"))
    if co["transitions"]:
        console.print(transitions_table(co["transitions"]))
    for line in co_links(co):
        console.print(line)


def co_facts(co: dict[str, Any]) -> Text:
    """Status, classification, author, dates and description of a CO."""
    facts = Text()
    facts.append("status   ").append_text(status_text(co["status"])).append("\n")
    for label, key in (
        ("type", "semantic_type"),
        ("domain", "domain_tag"),
        ("intent", "intent_category"),
        ("by", "created_by"),
    ):
        facts.append(f"{label:<9}{co.get(key) or '-'}\n")
    facts.append(f"created  {when(co.get('created_at'))}   updated {when(co.get('updated_at'))}\n")
    if co.get("description"):
        facts.append(f"\n{co['description']}\n")
    return facts


def transitions_table(transitions: list[dict[str, Any]]) -> Table:
    table = Table("when", "from", "to", "trigger", "actor", "reason", show_edge=False, header_style="bold")
    for t in transitions:
        table.add_row(
            when(t["timestamp"]),
            t["from"],
            status_text(t["to"]),
            t["trigger"],
            t["actor"],
            t.get("reason") or "",
        )
    return table


def co_links(co: dict[str, Any]) -> list[str]:
    """A line for each execution and memory linked to a CO, execution report, related CO and reference."""
    lines = [
        f"{label}: " + ", ".join(co[key])
        for label, key in (("executions", "linked_execution_ids"), ("memories", "linked_memory_ids"))
        if co.get(key)
    ]
    lines += [f"execution {r['execution_id']}: {r['outcome']}" for r in co.get("execution_reports") or []]
    lines += [f"{r['relation']} {r['co_id']}" for r in co.get("related_co_ids") or []]
    lines += [
        f"{r['type']}: {r['value']} {r.get('label') or ''}".rstrip()
        for r in co.get("external_references") or []
    ]
    return lines


def parse_reference(text: str) -> dict[str, str]:
    kind, sep, rest = text.partition("=")
    if not sep or not rest:
        raise typer.BadParameter(f"{text!r}: use TYPE=VALUE[=LABEL], e.g. url=https://example.com=slides")
    value, _, label = rest.partition("=")
    return {"type": kind, "value": value, "label": label}


def parse_relation(text: str) -> dict[str, str]:
    relation, sep, co_id = text.partition(":")
    if not sep or not co_id:
        raise typer.BadParameter(f"{text!r}: use RELATION:CO_ID, e.g. depends_on:0190…")
    return {"relation": relation, "co_id": co_id}


@co_app.command("create")
@friendly
def create_co(
    title: Annotated[str, typer.Argument(help="what the thing is, in a few words")],
    description: Annotated[str, typer.Option("--description", "-d")] = "",
    type_: Annotated[
        str | None, typer.Option("--type", help="task, project, goal, habit, decision …")
    ] = None,
    domain: Annotated[str | None, typer.Option(help="work, personal, health, finance …")] = None,
    intent: Annotated[str | None, typer.Option(help="track, remind, analyze, create …")] = None,
    ref: Annotated[
        list[str] | None, typer.Option("--ref", help="TYPE=VALUE[=LABEL]; TYPE is url, email, file or person")
    ] = None,
    related: Annotated[
        list[str] | None,
        typer.Option("--related", help="RELATION:CO_ID; blocks, depends_on, part_of or related_to"),
    ] = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Create a Cognitive Object; it starts EMERGING."""
    body: dict[str, Any] = {"title": title, "description": description}
    for key, value in (("semantic_type", type_), ("domain_tag", domain), ("intent_category", intent)):
        if value:
            body[key] = value
    if ref:
        body["external_references"] = [parse_reference(r) for r in ref]
    if related:
        body["related_co_ids"] = [parse_relation(r) for r in related]
    with gateway(url, token, "operator") as gw:
        co = gw.post("/v1/cos", body)
    if as_json:
        print_json(co)
        return
    console.print(
        Text.assemble("created ", (co["co_id"], "bold"), "  ", status_text(co["status"]), f"  {co['title']}")
    )


@co_app.command("transition")
@friendly
def transition_co(
    co_id: Annotated[str, typer.Argument(help="the CO's id")],
    trigger: Annotated[str, typer.Argument(help=TRIGGERS)],
    reason: Annotated[
        str | None, typer.Option("--reason", "-r", help="why, recorded with the transition")
    ] = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Fire a lifecycle trigger; an illegal one is refused with the legal triggers."""
    with gateway(url, token, "operator") as gw:
        co = gw.post(f"/v1/cos/{co_id}/transitions", {"trigger": trigger, "reason": reason})
    if as_json:
        print_json(co)
        return
    last = co["transitions"][-1]
    console.print(
        Text.assemble(
            (co["co_id"], "bold"),
            ": ",
            status_text(last["from"]),
            " → ",
            status_text(last["to"]),
            f"  ({trigger})",
        )
    )
