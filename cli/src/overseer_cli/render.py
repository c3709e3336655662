"""How the CLI shows things: event lines, approval cards, timelines, consequence views."""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

OWNER_STYLE = {
    "gateway": "cyan",
    "reasoning": "magenta",
    "firewall": "yellow",
    "executor": "green",
    "col": "blue",
    "observer": "bright_black",
}

STATUS_STYLE = {
    "pending": "white",
    "running": "cyan",
    "waiting": "bold yellow",
    "completed": "bold green",
    "failed": "bold red",
    "rejected": "red",
    "cancelled": "bright_black",
}

LABEL_STYLE = {"SUCCESS": "bold green", "FAILED": "bold red", "REJECTED": "red", "WAITING": "bold yellow"}


def short(identifier: str | None, size: int = 8) -> str:
    if not identifier:
        return "-"
    return identifier[-size:]


def clock(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%H:%M:%S", time.localtime(ts)) + f".{int((ts % 1) * 1000):03d}"


def compact(value: Any, limit: int = 80) -> str:
    text = orjson.dumps(value).decode() if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def status_text(status: str | None) -> Text:
    return Text(str(status), style=STATUS_STYLE.get(str(status), "white"))


def _facts(event_type: str, data: dict[str, Any]) -> Text:
    """The few fields of each event type worth a glance."""
    out = Text()
    facts = _FACTS.get(event_type)
    if facts is None:
        out.append(compact(data, 100), style="bright_black")
    else:
        facts(out, short(data.get("execution_id")), data)
    return out


def _proposed(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"{eid} ")
    out.append(str(data.get("tool")), style="bold")
    out.append(f" {compact(data.get('args', {}), 60)}  by {_who(data.get('proposer'))}")


def _verdict(out: Text, eid: str, data: dict[str, Any]) -> None:
    decision = str(data.get("decision"))
    style = {"allow": "green", "hold": "bold yellow", "deny": "bold red"}.get(decision, "white")
    out.append(f"{eid} ")
    out.append(decision.upper(), style=style)
    out.append(f" {data.get('level')} {data.get('tool')}")
    reasons = data.get("reasons") or []
    if reasons:
        out.append(f"  ({compact('; '.join(map(str, reasons)), 70)})", style="bright_black")


def _transitioned(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"{eid} ")
    # The moves held back and told with this one (a call's start, with its end) come first.
    moves = [*(data.get("earlier") or []), data]
    out.append_text(status_text(moves[0].get("from_status")))
    for moved in moves:
        out.append(" → ")
        out.append_text(status_text(moved.get("to_status")))
    out.append(f"  {data.get('trigger')} by {data.get('actor')}", style="bright_black")
    if data.get("error_message"):
        out.append(f"  {compact(data['error_message'], 60)}", style="red")


def _card_requested(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"{eid} ")
    out.append(f"{data.get('kind')} card", style="bold yellow")
    out.append(f" for {data.get('tool')} {compact(data.get('args', {}), 50)}")


def _human_answer(out: Text, eid: str, data: dict[str, Any]) -> None:
    word = data.get("response") or data.get("decision")
    who = _who(data.get("responder") or data.get("decided_by"))
    out.append(f"{eid} ")
    out.append(str(word), style="bold")
    out.append(f" by {who}")


def _observed_state(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"{eid} {data.get('action_summary', '')} ")
    out.append_text(status_text(data.get("to_status")))


def _observed_fact(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"{eid} ")
    out.append_text(status_text(data.get("final_status")))
    detail = data.get("error_summary") or data.get("result_summary") or ""
    out.append(f" {compact(detail, 60)}", style="bright_black")


def _contract_created(out: Text, eid: str, data: dict[str, Any]) -> None:
    """A new contract, PENDING, and the moves it made at once (to RUNNING, on to WAITING, or to its end)."""
    out.append(f"{eid} ")
    out.append_text(status_text("pending"))
    moves = data.get("transitions") or []
    for move in moves:
        out.append(" → ")
        out.append_text(status_text(move.get("to_status")))
    out.append(f" {data.get('tool')}")
    if data.get("irreversible"):
        out.append(" irreversible", style="yellow")
    if moves and moves[-1].get("error_message"):
        out.append(f"  {compact(moves[-1]['error_message'], 60)}", style="red")


def _audit_record(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"#{data.get('index')} {str(data.get('hash', ''))[:12]}")


def _audit_head(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(f"head #{data.get('index')} {str(data.get('hash', ''))[:12]}")


def _conversation(out: Text, eid: str, data: dict[str, Any]) -> None:
    out.append(compact(data.get("text", ""), 90))


_FACTS: dict[str, Callable[[Text, str, dict[str, Any]], None]] = {
    "execution.proposed": _proposed,
    "firewall.verdict_issued": _verdict,
    "execution.transitioned": _transitioned,
    "ecs.requested": _card_requested,
    "human.responded": _human_answer,
    "human.decision_recorded": _human_answer,
    "observation.execution_state": _observed_state,
    "observation.execution_fact": _observed_fact,
    "execution.contract_created": _contract_created,
    "audit.recorded": _audit_record,
    "audit.head_published": _audit_head,
    "conversation.message_received": _conversation,
    "conversation.replied": _conversation,
}


def _who(principal: Any) -> str:
    if isinstance(principal, dict):
        return f"{principal.get('kind')}:{principal.get('id')}"
    return str(principal)


def event_line(message: dict[str, Any]) -> Text:
    """One WebSocket message ``{"seq","subject","type","event"}`` as a coloured line."""
    event = message.get("event") or {}
    subject = str(message.get("subject", ""))
    owner = subject.split(".")[1] if subject.count(".") >= 2 else "?"
    line = Text()
    line.append(f"{message.get('seq', ''):>7} ", style="bright_black")
    line.append(clock(event.get("occurred_at")) + " ", style="bright_black")
    line.append(f"{owner:<9}", style=OWNER_STYLE.get(owner, "white"))
    line.append(
        f"{message.get('type', event.get('type', '')):<30}", style="bold " + OWNER_STYLE.get(owner, "white")
    )
    session = event.get("correlation_id")
    if session:
        line.append(f"[{short(session, 12)}] ", style="bright_black")
    line.append_text(_facts(str(message.get("type", "")), event.get("data") or {}))
    # One event, one line: cut at the terminal's edge rather than wrap into the next event.
    line.no_wrap = True
    line.overflow = "ellipsis"
    return line


def local_write_diff(home: Path, args: dict[str, Any]) -> str | None:
    """A diff computed here when the preview has none: the sandbox file against the new content."""
    path = str(args.get("path", ""))
    if not path:
        return None
    target = (home / "sandbox" / path).resolve()
    try:
        before = target.read_text(encoding="utf-8") if target.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return None
    after = str(args.get("content", ""))
    if args.get("append"):
        after = before + after
    diff = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(diff)


def approval_card(item: dict[str, Any], home: Path | None = None) -> Panel:
    """What a person must see before deciding: the tool, every argument, the preview (a diff for fs.write)."""
    kind = item.get("kind", "approval")
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("execution", str(item.get("execution_id")))
    head.add_row("session", str(item.get("session_id")))
    head.add_row("tool", Text(str(item.get("tool")), style="bold"))
    head.add_row("level", Text(str(item.get("level")), style="bold yellow"))
    # A card read from a session's view has no requester: the agent of that session asked.
    if item.get("requested_by") is not None:
        head.add_row("requested by", str(item.get("requested_by")))
    if item.get("requested_at") is not None:
        head.add_row("requested at", clock(item.get("requested_at")))
    head.add_row("args_hash", Text(str(item.get("args_hash")), style="bright_black"))
    if item.get("message"):
        head.add_row("message", str(item.get("message")))
    parts: list[RenderableType] = [head, Text("arguments", style="bold underline")]
    parts.append(Syntax(orjson.dumps(item.get("args", {}), option=orjson.OPT_INDENT_2).decode(), "json"))
    preview = item.get("preview")
    diff = preview.get("diff") if isinstance(preview, dict) else None
    if diff is None and item.get("tool") == "fs.write" and home is not None:
        diff = local_write_diff(home, item.get("args") or {})
    if diff:
        parts += [Text("preview (diff)", style="bold underline"), Syntax(diff, "diff")]
    elif isinstance(preview, dict) and preview.get("rendered"):
        parts += [Text("preview", style="bold underline"), Text(str(preview["rendered"]))]
    elif isinstance(preview, dict) and preview.get("kind") == "shell":
        parts += [Text("preview", style="bold underline"), Syntax(str(preview.get("command", "")), "bash")]
    elif preview:
        parts += [Text("preview", style="bold underline"), Text(compact(preview, 2000))]
    if kind == "reconciliation":
        parts.append(
            Text(
                "This irreversible call was interrupted by a crash: its outcome is unknown. "
                "Say what really happened: completed or failed.",
                style="bold red",
            )
        )
    title = "Reconciliation: outcome unknown" if kind == "reconciliation" else "Approval needed"
    return Panel(Group(*parts), title=title, border_style="yellow" if kind != "reconciliation" else "red")


def approvals_table(items: list[dict[str, Any]]) -> Table:
    table = Table(title=f"{len(items)} pending")
    # Ids whole: they are what `approve` and `reject` take (narrow terminals fold them, never cut them).
    table.add_column("execution", overflow="fold", min_width=36)
    for column in ("kind", "session", "tool", "arguments", "level", "requested by", "at"):
        table.add_column(column)
    for item in items:
        table.add_row(
            str(item.get("execution_id")),
            str(item.get("kind")),
            str(item.get("session_id")),
            str(item.get("tool")),
            compact(item.get("args", {}), 50),
            str(item.get("level")),
            str(item.get("requested_by")),
            clock(item.get("requested_at")),
        )
    return table


def timeline_table(timeline: dict[str, Any]) -> Group:
    summaries = {c["execution_id"]: c.get("action_summary", "") for c in timeline.get("contracts", [])}
    table = Table(title=f"Session {timeline.get('session_id')}: transitions")
    for column in ("time", "execution", "action", "from", "", "to", "trigger", "actor"):
        table.add_column(column)
    for t in timeline.get("transitions", []):
        table.add_row(
            clock(t.get("timestamp")),
            short(t.get("execution_id")),
            compact(summaries.get(t.get("execution_id"), ""), 40),
            status_text(t.get("from_status")),
            "→",
            status_text(t.get("to_status")),
            str(t.get("trigger")),
            f"{t.get('actor')} ({t.get('actor_category')})",
        )
    contracts = Table(title="Contracts")
    for column in ("execution", "action", "status", "irreversible", "transitions", "result / error"):
        contracts.add_column(column)
    for c in timeline.get("contracts", []):
        contracts.add_row(
            str(c.get("execution_id")),
            compact(c.get("action_summary", ""), 40),
            status_text(c.get("current_status")),
            "yes" if c.get("irreversible") else "no",
            str(c.get("transition_count")),
            compact(c.get("error_message") or c.get("result") or "", 50),
        )
    summary = Text(
        f"{timeline.get('total_contracts', 0)} contracts: {timeline.get('terminal_contracts', 0)} ended, "
        f"{timeline.get('active_contracts', 0)} active"
        + (", one is waiting for a person" if timeline.get("has_suspended") else "")
        + (", an irreversible action completed" if timeline.get("has_irreversible_completed") else ""),
        style="bold",
    )
    return Group(table, contracts, summary)


def consequence_panel(view: dict[str, Any]) -> Panel:
    label = str(view.get("consequence_label"))
    flags = []
    if view.get("has_side_effects"):
        flags.append("⚠ IRREVERSIBLE")
    if view.get("was_suspended"):
        flags.append("(human-confirmed)")
    headline = Text()
    headline.append(f"[{label}", style=LABEL_STYLE.get(label, "bold"))
    headline.append((" " + " ".join(flags)) if flags else "", style="yellow")
    headline.append("] ", style=LABEL_STYLE.get(label, "bold"))
    headline.append(str(view.get("action_summary", "")))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    rows = (
        ("execution", view.get("execution_id")),
        ("result", view.get("result")),
        ("error", view.get("error_message")),
        ("side effects", yes_no(view.get("has_side_effects"))),
        ("waited for a person", yes_no(view.get("was_suspended"))),
        ("still pending", yes_no(view.get("is_still_pending"))),
        ("took", duration(view.get("total_duration_ms"))),
    )
    for label, value in rows:
        if value not in (None, ""):
            grid.add_row(label, str(value))
    return Panel(
        Group(headline, grid), title="What happened (the execution's consequence view)", border_style="green"
    )


def yes_no(value: Any) -> str | None:
    """A flag as people say it; None when the view does not say."""
    return None if value is None else ("yes" if value else "no")


def duration(milliseconds: Any) -> str | None:
    """``850 ms``, ``10.7 s``, ``2 min 57 s``, ``1 h 4 min``; None when unknown."""
    if not isinstance(milliseconds, int | float):
        return None
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


# ---------------------------------------------------------------------- chat --
# The agent's words are shown as Text, never as markup: a consequence line such as
# "[SUCCESS ⚠ IRREVERSIBLE (human-confirmed)] …" would otherwise be read as a style tag.

AGENT_STYLE = "bold magenta"
PERSON_STYLE = "bold cyan"


def step_line(data: dict[str, Any]) -> Text:
    """One ``agent.step_taken`` as a dim line: the node that ran → where the turn went, and its note."""
    record = data.get("record") or {}
    line = Text(style="bright_black")
    line.append(f"  · {data.get('step', record.get('step', '?'))} ")
    line.append(f"{record.get('node', '?')} → {record.get('next', '?')}")
    facts = [str(record[key]) for key in ("plan", "tool") if record.get(key)]
    if facts:
        line.append(f"  [{' '.join(facts)}]")
    if record.get("note"):
        line.append(f"  {record['note']}")
    line.no_wrap = True
    line.overflow = "ellipsis"
    return line


def agent_says(text: str) -> Text:
    """The agent's reply as the conversation shows it."""
    return Text.assemble(("agent › ", AGENT_STYLE), text)


def person_says(text: str) -> Text:
    return Text.assemble(("you › ", PERSON_STYLE), text)


def option_text(option: Any) -> str:
    """An option of the agent's question as a person reads it (a string, or a dict with a label)."""
    if isinstance(option, dict):
        for key in ("label", "text", "value"):
            if option.get(key) is not None:
                return str(option[key])
        return compact(option, 60)
    return str(option)


def chosen_answer(typed: str, options: list[Any]) -> str:
    """What a person's typed answer means: the number of an option picks that option, anything else
    is the answer as typed (trimmed)."""
    answer = typed.strip()
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return option_text(options[int(answer) - 1])
    return answer


def question_panel(request: dict[str, Any]) -> Panel:
    """The agent's open question (clarify, choose, confirm, permission) with its numbered options."""
    parts: list[RenderableType] = [Text(str(request.get("msg") or ""), style="bold")]
    options = list(request.get("options") or [])
    for number, option in enumerate(options, 1):
        parts.append(Text(f"  {number}. {option_text(option)}"))
    if options:
        parts.append(Text("Answer with a number or in your own words.", style="bright_black"))
    kind = request.get("type") or "question"
    return Panel(Group(*parts), title=f"The agent asks ({kind})", border_style="magenta")


def _message_content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):  # OpenAI content parts
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


def history_lines(history: list[dict[str, Any]]) -> Group:
    """A session's dialogue (OpenAI-format messages): the person, the agent, its tool calls and their results."""
    lines: list[RenderableType] = []
    for message in history:
        role = message.get("role")
        content = _message_content(message)
        if role == "user":
            lines.append(person_says(content))
        elif role == "assistant":
            if content:
                lines.append(agent_says(content))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                lines.append(
                    Text(
                        f"  → {function.get('name', '?')} {compact(function.get('arguments', ''), 100)}",
                        style="bright_black",
                    )
                )
        elif role == "tool":
            lines.append(Text(f"  ← {compact(content, 120)}", style="bright_black"))
        else:
            lines.append(Text(f"  ({role}) {compact(content, 120)}", style="bright_black"))
    if not lines:
        lines.append(Text("(nothing said yet)", style="bright_black"))
    return Group(*lines)


def trace_table(trace: list[dict[str, Any]], turn_id: str | None) -> Table:
    """The cognitive trace of one turn (every turn's when ``turn_id`` is None), a row per node step."""
    records = [r for r in trace if turn_id is None or r.get("turn_id") == turn_id]
    table = Table(title=f"Turn {short(turn_id, 12)}: {len(records)} steps" if turn_id else "Trace")
    for column in ("step", "node", "", "next", "status", "decision", "note"):
        table.add_column(column)
    for record in records:
        decision = " ".join(
            str(record[key]) for key in ("plan", "tool", "confidence", "tone") if record.get(key) is not None
        )
        table.add_row(
            str(record.get("step", "")),
            str(record.get("node", "")),
            "→",
            str(record.get("next", "")),
            str(record.get("status", "")),
            decision,
            Text(str(record.get("note") or "")),
        )
    return table


def memory_table(items: list[dict[str, Any]], query: str) -> Table:
    """What the agent remembers that matches ``query``, best match first."""
    table = Table(title=f"Memories matching {query!r}: {len(items)}")
    for column in ("at", "kind", "memory", "execution", "score"):
        table.add_column(column)
    for item in items:
        score = item.get("score")
        table.add_row(
            clock(item.get("at")),
            str(item.get("kind", "")),
            Text(compact(item.get("text", ""), 100)),
            short(item.get("execution_id"), 12),
            f"{score:.2f}" if isinstance(score, int | float) else "",
        )
    return table


def usage_table(usage: dict[str, Any]) -> Table:
    """A session's model usage, its last turn's and each model's (all zeros while the offline planner plans)."""
    table = Table(title="Model usage")
    for column in ("", "model calls", "prompt tokens", "completion tokens", "total tokens"):
        table.add_column(column, justify="right" if column else "left")
    rows = [("this session", usage), ("its last turn", usage.get("last_turn") or {})]
    rows += [(f"model {name}", counts) for name, counts in (usage.get("by_model") or {}).items()]
    for label, counts in rows:
        table.add_row(
            label,
            *(
                f"{int(counts.get(key, 0)):,}"
                for key in ("model_calls", "prompt_tokens", "completion_tokens", "total_tokens")
            ),
        )
    return table
