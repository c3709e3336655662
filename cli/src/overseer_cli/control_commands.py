"""Operator controls through the gateway's REST API: agent modes, the two-stage abort of a session,
cancelling one execution, perception stats and the safety prompt.

``overseer agents`` / ``overseer agents mode PRINCIPAL MODE``, ``overseer session pause|resume|cancel``,
``overseer execution cancel``, ``overseer perception``, ``overseer prompt``. Each uses the dev token of
the role its route needs (``--token`` / ``OVERSEER_TOKEN`` win); a refusal is one red line with the
gateway's reason. ``--json`` prints the gateway's answer as is. Mount with :func:`mount`.
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from overseer_cli.client import Gateway, console, friendly, resolve

Url = Annotated[
    str | None, typer.Option("--url", help="the gateway (default: OVERSEER_URL, the local stack)")
]
Token = Annotated[
    str | None, typer.Option("--token", help="a bearer token (default: OVERSEER_TOKEN, tokens.json)")
]
AsJson = Annotated[bool, typer.Option("--json", help="print the raw JSON answer")]
Reason = Annotated[str | None, typer.Option("--reason", help="why, recorded with the event and audited")]

MODE_STYLE = {"supervised": "green", "delegated": "yellow", "audited": "magenta"}

agents_app = typer.Typer(
    help="Agent modes: list them (no sub-command), or set one (admin).",
    invoke_without_command=True,
    no_args_is_help=False,
)
session_app = typer.Typer(
    help="The two-stage abort of a session: pause (hold new proposals), then cancel its waiting work; resume.",
    no_args_is_help=True,
)
execution_app = typer.Typer(
    help="One execution: cancel it while it is pending or waiting.", no_args_is_help=True
)


def _print_json(answer: Any) -> None:
    print(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode())


# ------------------------------------------------------------------ agents --
def _grant_text(grant: dict[str, Any] | None) -> str:
    if not grant:
        return ""
    parts = [", ".join(grant.get("tools") or [])]
    if grant.get("max_steps") is not None:
        parts.append(f"{grant['max_steps']} steps")
    if grant.get("max_session_calls") is not None:
        parts.append(f"{grant['max_session_calls']} calls per session")
    if grant.get("max_session_tokens") is not None:
        parts.append(f"{grant['max_session_tokens']} model tokens per session")
    if grant.get("expires_at") is not None:
        left = float(grant["expires_at"]) - time.time()
        parts.append(f"{left / 60:.0f} min left" if left > 0 else "expired")
    return "; ".join(parts)


def _agents_table(answer: dict[str, Any]) -> Table:
    table = Table(title=f"Agent modes (any other agent: {answer.get('default_mode', 'supervised')})")
    for column in ("principal", "mode", "grant", "steps used"):
        table.add_column(column)
    for agent in answer.get("agents", []):
        mode = str(agent.get("mode"))
        table.add_row(
            str(agent.get("principal")),
            f"[{MODE_STYLE.get(mode, 'white')}]{mode}[/]",
            _grant_text(agent.get("grant")),
            str(agent.get("steps_used", 0)) if mode == "delegated" else "",
        )
    return table


@agents_app.callback()
@friendly
def agents(ctx: typer.Context, url: Url = None, token: Token = None, as_json: AsJson = False) -> None:
    """With no sub-command: every agent with a mode set."""
    ctx.obj = {"url": url, "token": token}
    if ctx.invoked_subcommand is not None:
        return
    with Gateway(resolve(url, token, "viewer")) as gateway:
        answer = gateway.get("/v1/agents")
    if as_json:
        _print_json(answer)
    else:
        console.print(_agents_table(answer))


@agents_app.command("mode")
@friendly
def agents_mode(
    ctx: typer.Context,
    principal: Annotated[str, typer.Argument(help="the agent principal, e.g. agent:helper")],
    mode: Annotated[str, typer.Argument(help="supervised, delegated or audited")],
    tools: Annotated[
        list[str] | None, typer.Option("--tool", help="delegated: a tool (or glob) of the grant; repeat")
    ] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="delegated: the step budget")] = None,
    seconds: Annotated[
        float | None, typer.Option("--seconds", help="delegated: how long the grant lasts, from now")
    ] = None,
    session_calls: Annotated[
        int | None,
        typer.Option("--session-calls", help="delegated: tool calls per session before one is held"),
    ] = None,
    session_tokens: Annotated[
        int | None,
        typer.Option("--session-tokens", help="delegated: model tokens per session before a call is held"),
    ] = None,
    url: Url = None,
    token: Token = None,
    as_json: AsJson = False,
) -> None:
    """Set an agent's mode (admin). Delegated needs at least one --tool."""
    parent = ctx.obj or {}
    body: dict[str, Any] = {"mode": mode}
    limits = {
        "max_steps": max_steps,
        "seconds": seconds,
        "max_session_calls": session_calls,
        "max_session_tokens": session_tokens,
    }
    if tools or any(value is not None for value in limits.values()):
        given = {key: value for key, value in limits.items() if value is not None}
        body["grant"] = {"tools": list(tools or []), **given}
    target = resolve(url or parent.get("url"), token or parent.get("token"), "admin")
    with Gateway(target) as gateway:
        answer = gateway.call("PUT", f"/v1/agents/{principal}/mode", json=body)
    if as_json:
        _print_json(answer)
        return
    console.print(f"{principal} is now [{MODE_STYLE.get(mode, 'white')}]{mode}[/]")
    console.print(_agents_table(answer))


# ---------------------------------------------------------------- sessions --
def _stop(
    session_id: str, action: str, reason: str | None, url: str | None, token: str | None
) -> dict[str, Any]:
    with Gateway(resolve(url, token, "operator")) as gateway:
        answer: dict[str, Any] = gateway.post(f"/v1/sessions/{session_id}/{action}", {"reason": reason})
    return answer


@session_app.command("pause")
@friendly
def session_pause(
    session_id: str, reason: Reason = None, url: Url = None, token: Token = None, as_json: AsJson = False
) -> None:
    """First stage: hold every new proposal of the session for a person (what runs finishes)."""
    answer = _stop(session_id, "pause", reason, url, token)
    if as_json:
        _print_json(answer)
    elif answer.get("changed"):
        console.print(f"[yellow]paused[/] session {session_id}: its new proposals wait for a person")
    else:
        console.print(f"session {session_id} was already paused")


@session_app.command("cancel")
@friendly
def session_cancel(
    session_id: str, reason: Reason = None, url: Url = None, token: Token = None, as_json: AsJson = False
) -> None:
    """Second stage, on a paused session: cancel its pending and waiting executions."""
    answer = _stop(session_id, "cancel", reason, url, token)
    if as_json:
        _print_json(answer)
    else:
        console.print(
            f"[red]cancel requested[/] for session {session_id}: its pending and waiting executions "
            "are cancelled; it stays paused"
        )


@session_app.command("resume")
@friendly
def session_resume(
    session_id: str, reason: Reason = None, url: Url = None, token: Token = None, as_json: AsJson = False
) -> None:
    """Lift a pause: the session's new proposals are judged as usual again."""
    answer = _stop(session_id, "resume", reason, url, token)
    if as_json:
        _print_json(answer)
    else:
        console.print(f"[green]resumed[/] session {session_id}")


# -------------------------------------------------------------- executions --
@execution_app.command("cancel")
@friendly
def execution_cancel(
    execution_id: str, reason: Reason = None, url: Url = None, token: Token = None, as_json: AsJson = False
) -> None:
    """Cancel one pending or waiting execution (a running or ended one is refused, its state named)."""
    with Gateway(resolve(url, token, "operator")) as gateway:
        answer = gateway.post(f"/v1/executions/{execution_id}/cancel", {"reason": reason})
    if as_json:
        _print_json(answer)
    else:
        console.print(f"[red]cancelled[/] {execution_id} ({answer.get('tool') or answer.get('action_type')})")


# ----------------------------------------------------------- the firewall --
def _perception_tables(answer: dict[str, Any]) -> tuple[Table, Table]:
    tools = Table(title="Per tool")
    for column in ("tool", "approved", "rejected", "rate", "mean latency", "streak", "outcomes"):
        tools.add_column(column)
    for name, t in answer.get("tools", {}).items():
        rate = t.get("approval_rate")
        latency = t.get("mean_latency_ms")
        streak = (
            f"{t['consecutive_rejections']} rejected"
            if t.get("consecutive_rejections")
            else f"{t.get('consecutive_approvals', 0)} approved"
        )
        tools.add_row(
            name,
            str(t.get("approvals", 0)),
            str(t.get("rejections", 0)),
            "" if rate is None else f"{rate:.0%}",
            "" if latency is None else f"{latency / 1000:.1f} s",
            streak,
            ", ".join(f"{k} {v}" for k, v in (t.get("outcomes") or {}).items()),
        )
    approvers = Table(title="Per approver (a long streak of fast approvals is rubber-stamping)")
    for column in ("approver", "approvals in a row", "latest latencies"):
        approvers.add_column(column)
    for name, a in answer.get("approvers", {}).items():
        latencies = [f"{ms / 1000:.1f} s" for ms in (a.get("streak_latencies_ms") or [])[-5:]]
        approvers.add_row(name, str(a.get("consecutive_approvals", 0)), ", ".join(latencies))
    return tools, approvers


def perception(url: Url = None, token: Token = None, as_json: AsJson = False) -> None:
    """What the firewall perceives of approvals: per tool and per approver (operator)."""
    with Gateway(resolve(url, token, "operator")) as gateway:
        answer = gateway.get("/v1/perception")
    if as_json:
        _print_json(answer)
        return
    for table in _perception_tables(answer):
        console.print(table)


def prompt(url: Url = None, token: Token = None, as_json: AsJson = False) -> None:
    """The safety prompt the agent reasons under, with the constraints learned from hints."""
    with Gateway(resolve(url, token, "viewer")) as gateway:
        answer = gateway.get("/v1/prompt/safety")
    if as_json:
        _print_json(answer)
        return
    console.print(answer.get("prompt", ""), markup=False, highlight=False)
    constraints = answer.get("constraints") or []
    if constraints:
        console.print("\n[bold]Constraints learned from hints[/]")
        for line in constraints:
            console.print(f"  • {line}", markup=False)


def mount(app: typer.Typer) -> None:
    """Add the control commands to the ``overseer`` application."""
    app.add_typer(agents_app, name="agents")
    app.add_typer(session_app, name="session")
    app.add_typer(execution_app, name="execution")
    app.command("perception")(friendly(perception))
    app.command("prompt")(friendly(prompt))
