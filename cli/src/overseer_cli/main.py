"""The ``overseer`` command line: run the stack, watch it, chat with the agent, decide on approvals, verify the audit, demo, bench.

Commands that talk to the gateway take ``--url`` and ``--token`` (or
``OVERSEER_URL`` / ``OVERSEER_TOKEN``); by default they use the local stack
(``OVERSEER_HOME/stack.json``) and the dev token of the role they need from
``OVERSEER_HOME/tokens.json``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.prompt import Prompt

from overseer_cli import homes, render
from overseer_cli.client import CliError, Gateway, Target, console, errors, friendly, resolve
from overseer_events.ids import uuid7
from overseer_runtime.partitions import MAX_PARTITIONS

app = typer.Typer(
    name="overseer",
    help="Overseer: a human decision firewall for AI agents.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        typer.echo(f"overseer {version('overseer-cli')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Overseer: a human decision firewall for AI agents."""
    homes.settle()


Url = Annotated[
    str | None, typer.Option("--url", help="gateway URL (env OVERSEER_URL; default: the local stack)")
]
Token = Annotated[
    str | None,
    typer.Option("--token", help="bearer token (env OVERSEER_TOKEN; default: the dev token of the role)"),
]


# ---------------------------------------------------------------- the stack --
@app.command()
@friendly
def up(
    host: Annotated[str | None, typer.Option(help="gateway host (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="gateway port (default 8080)")] = None,
    nats_url: Annotated[
        str | None,
        typer.Option("--nats-url", help="use this NATS server (default: NATS_URL, else an embedded one)"),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            help="local: run a small model on this machine (llama.cpp, SmolLM2-135M) and let the agent plan with it",
        ),
    ] = None,
    cluster: Annotated[
        int | None,
        typer.Option(
            "--cluster",
            min=3,
            max=7,
            help="run an embedded JetStream cluster of this many nats-servers (3 or more), every stream "
            "replicated on each node: the stack carries on when one node dies",
        ),
    ] = None,
    executors: Annotated[
        int | None,
        typer.Option(
            "--executors",
            min=1,
            max=MAX_PARTITIONS,
            help="run this many executor processes sharing the work, each the sessions that hash to it "
            "(default: [partitions] executor, 1)",
        ),
    ] = None,
    firewalls: Annotated[
        int | None,
        typer.Option(
            "--firewalls",
            min=1,
            max=MAX_PARTITIONS,
            help="run this many firewall processes sharing the judging, each the sessions that hash to it; "
            "the first also keeps the policy, and each keeps its own audit chain "
            "(default: [partitions] firewall, 1)",
        ),
    ] = None,
) -> None:
    """Run the whole stack in the foreground; Ctrl-C stops all of it cleanly."""
    from overseer_cli.supervisor import run_stack

    homes.settle(starting=True)
    if cluster is not None and nats_url is not None:
        raise typer.BadParameter(
            "--cluster starts its own nats-servers: leave out --nats-url", param_hint="--cluster"
        )

    def start() -> int:
        return run_stack(
            host=host,
            port=port,
            nats_url=nats_url,
            cluster=cluster or 0,
            executors=executors,
            firewalls=firewalls,
        )

    if llm is None:
        raise typer.Exit(start())
    if llm != "local":
        raise typer.BadParameter(
            "the only choice is 'local' (any other model: set OPENAI_BASE_URL)", param_hint="--llm"
        )
    raise typer.Exit(_with_local_model(start))


def _with_local_model(run: Callable[[], int]) -> int:
    """``run`` with the agent pointed at a model started here, stopped when ``run`` returns."""
    import os

    from overseer_cli.local_llm import MODEL_NAME, LocalModelUnavailable, start_local_model
    from overseer_runtime.config import load_settings

    try:
        model = start_local_model(load_settings().home / "logs" / "local-model.log")
    except LocalModelUnavailable as exc:
        console.print(f"[red]No local model[/]: {exc}")
        return 2
    console.print(f"Local model {MODEL_NAME} at {model.base_url}")
    os.environ |= {
        "OPENAI_BASE_URL": model.base_url,
        "OVERSEER_LLM_MODEL": MODEL_NAME,
        "OPENAI_API_KEY": "local",
    }
    try:
        return run()
    finally:
        model.stop()


@app.command()
@friendly
def status() -> None:
    """Each service: up/down, consumer lag, relay backlog."""
    from overseer_cli.supervisor import print_status

    raise typer.Exit(print_status())


nats_app = typer.Typer(
    help="The NATS side of a deployment that does not run `overseer up` (containers, a cluster).",
    no_args_is_help=True,
)
app.add_typer(nats_app, name="nats")


@nats_app.command("config")
@friendly
def nats_config(
    directory: Annotated[Path, typer.Option("--dir", help="where the keys and the configuration go")],
    host: Annotated[str, typer.Option(help="the address nats-server listens on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="the port nats-server listens on")] = 4222,
    store: Annotated[Path, typer.Option(help="nats-server's JetStream store directory")] = Path(
        "/data/jetstream"
    ),
    monitor_port: Annotated[
        int | None, typer.Option(help="serve nats-server's monitoring (its /healthz) on this port")
    ] = None,
    keys: Annotated[
        Path | None,
        typer.Option(help="where the keys are (made once); a cluster's nodes share one (default: DIR/keys)"),
    ] = None,
    server_name: Annotated[
        str | None, typer.Option("--server-name", help="a cluster node: its name, unique in the cluster")
    ] = None,
    cluster_listen: Annotated[
        str, typer.Option("--cluster-listen", help="a cluster node: where it listens for the other nodes")
    ] = "0.0.0.0:6222",
    routes: Annotated[
        list[str] | None,
        typer.Option(
            "--route", help="a cluster node: another node's host:port of its cluster listener; repeat"
        ),
    ] = None,
) -> None:
    """Write one nkey per credential (DIR/keys/<user>.nk, once) and nats-server.conf with their
    permissions: hand each service only its own seed file. With --server-name and --route, the
    configuration of one node of a JetStream cluster (see deploy/cluster/)."""
    from overseer_runtime.launcher import cluster_block, write_server_config

    if bool(server_name) != bool(routes):
        raise typer.BadParameter("a cluster node needs both --server-name and at least one --route")
    cluster = cluster_block(server_name, cluster_listen, routes) if server_name and routes else ""
    config = write_server_config(
        directory,
        host=host,
        port=port,
        store_dir=store,
        monitor_port=monitor_port,
        cluster=cluster,
        keys=keys,
    )
    typer.echo(f"{config} (seeds in {keys or directory / 'keys'})")


@nats_app.command("provision")
@friendly
def nats_provision(
    nats_url: Annotated[
        str | None, typer.Option("--nats-url", help="the NATS server (default: NATS_URL)")
    ] = None,
) -> None:
    """Create the streams and every service's durable consumers, as the provisioner
    (OVERSEER_NATS_USER=provisioner with OVERSEER_NATS_NKEY_SEED_FILE, or OVERSEER_HOME's keys)."""
    from overseer_cli.supervisor import provision_stack
    from overseer_runtime.config import LOCAL_NATS_URL, load_settings
    from overseer_runtime.credentials import credentials_for
    from overseer_runtime.permissions import PROVISIONER

    settings = load_settings()
    url = nats_url or settings.nats_url or LOCAL_NATS_URL
    subjects = settings.subjects
    credential = credentials_for(settings, PROVISIONER)
    try:
        asyncio.run(provision_stack(url, credential, subjects, settings.nats))
    except Exception as exc:
        typer.echo(f"cannot reach NATS at {url} or provision it: {exc or type(exc).__name__}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"provisioned {subjects.events_stream} and every service's consumers at {url}")


# ------------------------------------------------------------------ watching --
@app.command()
@friendly
def tail(
    subject: Annotated[
        str | None, typer.Option("--subject", "-s", help="e.g. 'execution.*' or 'firewall.>'")
    ] = None,
    session: Annotated[str | None, typer.Option("--session", help="only this session's events")] = None,
    since: Annotated[
        int | None, typer.Option("--since", min=0, help="first every event after this seq")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one raw JSON message per line")] = False,
    url: Url = None,
    token: Token = None,
) -> None:
    """Follow the live event stream; reconnects resume after the last seq seen, so nothing is missed."""
    from overseer_cli.live import follow

    target = resolve(url, token, "viewer")

    def show(message: dict[str, Any]) -> None:
        if as_json:
            sys.stdout.write(orjson.dumps(message).decode() + "\n")
            sys.stdout.flush()
        else:
            console.print(render.event_line(message))

    def notice(text: str) -> None:
        errors.print(f"[yellow]{text}[/]")

    said = False

    def waiting() -> None:
        # Once, on stderr: a quiet stack is not a broken one, and --json's stdout stays events only.
        nonlocal said
        if not said:
            errors.print(f"[bright_black]connected to {target.url}, waiting for events… (Ctrl-C stops)[/]")
        said = True

    try:
        asyncio.run(
            follow(
                target,
                show,
                subjects=subject,
                session=session,
                since=since,
                on_notice=notice,
                on_connected=waiting,
            )
        )
    except KeyboardInterrupt:
        pass


@app.command()
@friendly
def timeline(session_id: str, url: Url = None, token: Token = None) -> None:
    """A session's executions and every transition they went through, as tables."""
    with Gateway(resolve(url, token, "viewer")) as gateway:
        console.print(render.timeline_table(gateway.get(f"/api/execution/{session_id}/timeline")))


# ----------------------------------------------------------------- approvals --
approvals_app = typer.Typer(
    help="Open approvals: review them one by one (no sub-command), list, approve or reject.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(approvals_app, name="approvals")


def _approvals_target(ctx: typer.Context, url: str | None, token: str | None) -> Target:
    parent = ctx.obj or {}
    return resolve(url or parent.get("url"), token or parent.get("token"), "operator")


def _pending(gateway: Gateway) -> list[dict[str, Any]]:
    return list(gateway.get("/v1/approvals", params={"status": "pending"}))


def _find(gateway: Gateway, execution_id: str) -> dict[str, Any]:
    """The pending approval whose execution id is ``execution_id`` or begins with it (the short ids
    `tail` and `timeline` print do), when exactly one does."""
    items = _pending(gateway)
    for item in items:
        if item["execution_id"] == execution_id:
            return item
    matching = [item for item in items if item["execution_id"].startswith(execution_id)]
    if len(matching) == 1:
        return matching[0]
    if matching:
        ids = ", ".join(item["execution_id"] for item in matching)
        raise CliError(
            f"{execution_id} is the beginning of {len(matching)} pending approvals' ids ({ids}): give more of it"
        )
    raise CliError(f"no pending approval for execution {execution_id}; see `overseer approvals list`")


def _decide(gateway: Gateway, item: dict[str, Any], decision: str, reason: str | None = None) -> None:
    body: dict[str, Any] = {"decision": decision, "args_hash": item["args_hash"]}
    if reason:
        body["comment"] = reason
    gateway.post(f"/v1/approvals/{item['execution_id']}", body)
    style = "green" if decision in ("approve", "completed") else "red"
    console.print(f"[{style}]{decision}[/] recorded for {item['execution_id']}")


def _show_and_decide(
    target: Target, execution_id: str, decisions: tuple[str, str], reason: str | None
) -> None:
    """Show the card of ``execution_id`` and record ``decisions``: (for an approval, for a reconciliation)."""
    with Gateway(target) as gateway:
        item = _find(gateway, execution_id)
        console.print(render.approval_card(item, target.home))
        for_approval, for_reconciliation = decisions
        _decide(
            gateway,
            item,
            for_reconciliation if item.get("kind") == "reconciliation" else for_approval,
            reason,
        )


@approvals_app.callback()
@friendly
def approvals(
    ctx: typer.Context,
    url: Url = None,
    token: Token = None,
) -> None:
    """With no sub-command: show each pending card (arguments and preview) and ask what to do."""
    ctx.obj = {"url": url, "token": token}
    if ctx.invoked_subcommand is not None:
        return
    target = _approvals_target(ctx, url, token)
    with Gateway(target) as gateway:
        items = _pending(gateway)
        if not items:
            console.print("No pending approvals.")
            return
        for item in items:
            console.print(render.approval_card(item, target.home))
            if item.get("kind") == "reconciliation":
                choices, prompt = ["completed", "failed", "skip"], "What really happened?"
            else:
                choices, prompt = ["approve", "reject", "skip"], "Decision"
            answer = Prompt.ask(prompt, choices=choices, default="skip", console=console)
            if answer == "skip":
                continue
            reason = None
            if answer == "reject":
                reason = Prompt.ask("Reason (optional)", default="", console=console) or None
            _decide(gateway, item, answer, reason)


@approvals_app.command("list")
@friendly
def approvals_list(
    ctx: typer.Context,
    url: Url = None,
    token: Token = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List pending approvals and reconciliations."""
    with Gateway(_approvals_target(ctx, url, token)) as gateway:
        items = _pending(gateway)
    if as_json:
        print(orjson.dumps(items).decode())
    else:
        console.print(render.approvals_table(items))


@approvals_app.command("approve")
@friendly
def approvals_approve(
    ctx: typer.Context,
    execution_id: str,
    url: Url = None,
    token: Token = None,
    comment: Annotated[str | None, typer.Option("--comment")] = None,
) -> None:
    """Approve one card (shown first); for a reconciliation this says the call COMPLETED."""
    _show_and_decide(_approvals_target(ctx, url, token), execution_id, ("approve", "completed"), comment)


@approvals_app.command("reject")
@friendly
def approvals_reject(
    ctx: typer.Context,
    execution_id: str,
    reason: Annotated[str | None, typer.Option("--reason", help="why, recorded with the decision")] = None,
    url: Url = None,
    token: Token = None,
) -> None:
    """Reject one card; for a reconciliation this says the call FAILED."""
    _show_and_decide(_approvals_target(ctx, url, token), execution_id, ("reject", "failed"), reason)


# --------------------------------------------------------------------- audit --
audit_app = typer.Typer(help="The tamper-evident audit chain.", no_args_is_help=True)
app.add_typer(audit_app, name="audit")


@audit_app.command("verify")
@friendly
def audit_verify(url: Url = None, token: Token = None) -> None:
    """Recompute the hash chain and check it against the heads published on the event stream.

    Exit 1 when it is broken, 2 when it is intact in the file but could not be checked against
    the published heads."""
    with Gateway(resolve(url, token, "operator")) as gateway:
        result = gateway.get("/v1/audit/verify")
    # A firewall running as several replicas keeps one chain per replica: each is reported.
    chains = result.get("chains") or [result]
    codes = [
        _report_chain(chain, f"audit chain {chain.get('chain')}" if len(chains) > 1 else "audit chain")
        for chain in chains
    ]
    worst = 1 if 1 in codes else max(codes)
    if worst:
        raise typer.Exit(worst)


def _report_chain(result: dict[str, Any], name: str) -> int:
    """Print one chain's verification; its exit code (0 intact and anchored, 1 broken, 2 not checked)."""
    if not result.get("ok"):
        console.print(
            f"[bold red]{name} BROKEN[/] at record {result.get('first_broken')} (of {result.get('records')})"
        )
        if result.get("reason"):
            console.print(f"  {result['reason']}")
        if result.get("anchor_mismatch") is not None:
            console.print(
                f"  the head the firewall published on the event stream for record {result['anchor_mismatch']} "
                "does not match the chain in its file: the history there was rewritten"
            )
        return 1
    console.print(f"[green]{name} intact[/]: {result.get('records')} records")
    anchored = result.get("anchored")
    if anchored is None:
        console.print(
            f"[yellow]not checked against the published heads[/]: {result.get('anchor_error') or 'no answer'}"
        )
        return 2
    if anchored == 0:
        console.print("  anchored: no head published on the event stream yet")
        return 0
    through = result.get("anchored_through")
    unanchored = int(result.get("records") or 0) - int(through or 0)
    tail = f"; {unanchored} later records not anchored yet" if unanchored > 0 else ""
    console.print(
        f"  anchored: {anchored} heads published on the event stream match, through record {through}{tail}"
    )
    return 0


# ---------------------------------------------------------------------- chat --
@app.command()
@friendly
def chat(
    session: Annotated[
        str | None, typer.Argument(help="the session to join or start (default: a new one, chat-…)")
    ] = None,
    message: Annotated[
        list[str] | None,
        typer.Option(
            "--message",
            "-m",
            help="send this instead of reading the keyboard (repeatable: one turn after the other), then leave",
        ),
    ] = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="approve every approval card without asking")
    ] = False,
    answer: Annotated[
        list[str] | None,
        typer.Option("--answer", help="the answer to the agent's next question (repeatable, used in order)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the session's final view as JSON")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="every event of the session, not only the agent's steps")
    ] = False,
    wait: Annotated[
        float, typer.Option(help="seconds a turn may go without any news before giving up on it")
    ] = 60.0,
    url: Url = None,
    token: Token = None,
) -> None:
    """Talk to Overseer's agent: see its steps live, approve its tool calls and answer its questions in place.

    Commands inside: /history, /memory QUERY, /trace, /help, /quit (or Ctrl-D)."""
    from overseer_cli.chat import run_chat

    target = resolve(url, token, "operator")
    # With --json, stdout carries the view alone: the conversation goes to stderr.
    shown = errors if as_json else console
    try:
        asyncio.run(
            run_chat(
                target,
                shown,
                session=session,
                messages=list(message or []),
                yes=yes,
                answers=list(answer or []),
                wait=wait,
                verbose=verbose,
                as_json=as_json,
            )
        )
    except KeyboardInterrupt:
        shown.print()


# ----------------------------------------------------------------------- mcp --
@app.command()
@friendly
def mcp(
    session: Annotated[
        str | None,
        typer.Option(help="the session the calls belong to (default: a new one per run, mcp-…)"),
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(help="seconds a call held for a person waits for a decision before it is cancelled"),
    ] = 300.0,
    url: Url = None,
    token: Token = None,
) -> None:
    """Serve Overseer as an MCP server on standard input and output, for any MCP client.

    Point the client at the command `overseer mcp` (with OVERSEER_HOME, or --url and an agent's --token).
    It lists the tools the stack offers; each call is proposed as the token's agent and goes through the
    firewall: it runs, waits for a person's approval (the client is told while it waits), or is refused
    with the reason. The answer is what really happened."""
    from overseer_cli.mcp_proxy import run

    target = resolve(url, token, "agent")
    run(target, session or f"mcp-{uuid7()[-12:]}", timeout)


# ---------------------------------------------------------------- demo, bench --
class DemoAgent(StrEnum):
    chat = "chat"
    external = "external"


@app.command()
@friendly
def demo(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="approve without asking")] = False,
    agent: Annotated[
        DemoAgent,
        typer.Option(
            "--agent",
            help="chat: ask Overseer's own agent in a chat; external: the demo proposes the call itself over REST",
        ),
    ] = DemoAgent.chat,
    url: Url = None,
    token: Token = None,
    wait: Annotated[float, typer.Option(help="seconds to wait for each step")] = 30.0,
) -> None:
    """The worked example: a meeting invite to bob@example.com, held for your approval, then sent.

    By default through chat: you ask the agent, approve its card in place, then see the mail in the local SMTP sink and the agent's reply quoting what happened. With --agent external the demo proposes the call itself, as any agent would over REST."""
    if agent is DemoAgent.external:
        from overseer_cli.demo import Demo

        external = Demo(resolve(url, token, "agent"), console, yes=yes, wait=wait)
        view = asyncio.run(external.run())
        if view.get("consequence_label") != "SUCCESS" and not external.rejected:
            raise typer.Exit(1)  # neither sent nor turned down by the person: the demo said why
        return
    from overseer_cli.chat import last_reply
    from overseer_cli.demo import ChatDemo

    played, final = asyncio.run(ChatDemo(resolve(url, token, "operator"), console, yes=yes, wait=wait).run())
    reply = last_reply(final) or ""
    if not played.rejected and "[SUCCESS" not in reply:
        raise typer.Exit(1)  # not turned down by the person, yet the agent does not say it was done


@app.command()
def bench(
    scenarios: Annotated[list[str] | None, typer.Argument(help="scenarios to run (default: all)")] = None,
) -> None:
    """Run the benchmarks (as `make bench`): one JSON object per line, with a progress bar."""
    from overseer_cli.bench import run

    raise typer.Exit(run(list(scenarios or [])))


def _mount_co() -> None:
    try:
        from overseer_cli.co_commands import co_app
    except ImportError:
        return
    app.add_typer(co_app, name="co")


_mount_co()


def _mount_controls() -> None:
    from overseer_cli import control_commands, executions, policy_commands

    control_commands.mount(app)
    executions.mount(app)
    policy_commands.mount(app)


_mount_controls()

if __name__ == "__main__":  # pragma: no cover
    app()
