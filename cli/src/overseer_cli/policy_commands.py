"""``overseer policy``: the firewall's policy from the command line.

``show`` prints each tool's level as the admin set it, as the user's own answers moved it, and the
stricter of the two, which is in force. ``replay FILE`` evaluates a candidate admin layer (JSON or TOML,
the shape ``show --json`` prints under ``admin``) against the recorded proposals and says which verdicts
would change; ``edit FILE`` does the same, then, once confirmed, makes the candidate the admin layer
(admin token; the firewall validates it, versions it and records it in the audit chain). Mount with
:func:`mount`.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.prompt import Confirm
from rich.table import Table

from overseer_cli.client import CliError, Gateway, console, friendly, resolve
from overseer_cli.control_commands import AsJson, Token, Url

policy_app = typer.Typer(help="The firewall's policy: show it, replay a candidate, make it the admin layer.")

Candidate = Annotated[Path, typer.Argument(help="the candidate admin layer, a .json or .toml file")]
LEVEL_STYLE = {"AUTO": "green", "NOTIFY": "cyan", "CONFIRM": "yellow", "APPROVE": "yellow", "DENY": "red"}


def read_candidate(path: Path) -> dict[str, Any]:
    """The admin layer in ``path`` (TOML when it ends in .toml, else JSON); a ``version`` key is ignored."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        loaded = tomllib.loads(text) if path.suffix == ".toml" else orjson.loads(text)
    except (tomllib.TOMLDecodeError, orjson.JSONDecodeError) as exc:
        raise CliError(f"{path} is not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}") from exc
    if not isinstance(loaded, dict):
        raise CliError(f"{path}: an admin layer is a table of settings, not {type(loaded).__name__}")
    return {key: value for key, value in loaded.items() if key != "version"}


def levels_table(policy: dict[str, Any]) -> Table:
    admin = policy.get("admin", {})
    table = Table(title=f"Policy version {policy.get('version')} (admin layer v{admin.get('version')})")
    for column in ("tool", "admin", "user", "in force"):
        table.add_column(column)
    for tool, levels in sorted(policy.get("tools", {}).items()):
        effective = str(levels.get("effective"))
        changed = levels.get("unreviewed")
        table.add_row(
            f"{tool} [yellow](its {changed} changed: held until accepted)[/]" if changed else tool,
            str(levels.get("admin")),
            str(levels.get("user") or "—"),
            f"[{LEVEL_STYLE.get(effective, 'white')}]{effective}[/]",
        )
    return table


def changes_table(report: dict[str, Any]) -> Table:
    changed = report.get("changed", [])
    table = Table(title=f"{len(changed)} of {report.get('evaluated')} recorded verdicts would change")
    for column in ("execution", "tool", "now", "with the candidate", "why"):
        table.add_column(column, overflow="fold")
    for change in changed:
        before, after = change["before"], change["after"]
        table.add_row(
            change["execution_id"],
            str(change.get("tool")),
            f"{before['level']} {before['decision']}",
            f"{after['level']} {after['decision']}",
            "; ".join(change.get("reasons", [])),
        )
    return table


@policy_app.command("show")
@friendly
def show(url: Url = None, token: Token = None, as_json: AsJson = False) -> None:
    """Each tool's level: the admin layer's, the user layer's, and the one in force."""
    with Gateway(resolve(url, token, "viewer")) as gateway:
        policy = gateway.get("/v1/policy")
    if as_json:
        typer.echo(orjson.dumps(policy).decode())
    else:
        console.print(levels_table(policy))


@policy_app.command("replay")
@friendly
def replay(file: Candidate, url: Url = None, token: Token = None, as_json: AsJson = False) -> None:
    """Which recorded verdicts a candidate admin layer would change; nothing is changed (admin)."""
    with Gateway(resolve(url, token, "admin")) as gateway:
        report = gateway.post("/v1/policy/replay", read_candidate(file))
    if as_json:
        typer.echo(orjson.dumps(report).decode())
    else:
        console.print(changes_table(report))


@policy_app.command("edit")
@friendly
def edit(
    file: Candidate,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="save without asking")] = False,
    url: Url = None,
    token: Token = None,
) -> None:
    """Replay a candidate admin layer, then make it the admin layer once you confirm (admin)."""
    candidate = read_candidate(file)
    with Gateway(resolve(url, token, "admin")) as gateway:
        console.print(changes_table(gateway.post("/v1/policy/replay", candidate)))
        if not yes and not Confirm.ask("Make this the admin layer?", console=console):
            console.print("Nothing changed.")
            raise typer.Exit(1)
        saved = gateway.call("PUT", "/v1/policy/admin", json=candidate)
    console.print(f"[green]Saved[/]: the admin layer is now version {saved.get('admin', {}).get('version')}.")
    console.print(levels_table(saved))


@policy_app.command("accept")
@friendly
def accept(
    tool: Annotated[str, typer.Argument(help="the MCP tool whose change to accept, e.g. git.git_log")],
    url: Url = None,
    token: Token = None,
) -> None:
    """Accept how an MCP tool changed (its description, input schema or hints) so its calls are judged by
    the policy again instead of held (admin). `policy show` marks the tools that changed."""
    with Gateway(resolve(url, token, "admin")) as gateway:
        answer = gateway.post(f"/v1/policy/tools/{tool}/accept", {})
    console.print(f"[green]Accepted[/]: {tool}'s {answer.get('change')} as it is now.")


def mount(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
