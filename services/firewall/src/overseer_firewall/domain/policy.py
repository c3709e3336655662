"""PolicyStore: the admin layer (a TOML file, replaced only through the admin API) and the user layer
(event-sourced, adaptive). The effective level of a call is the stricter of the two.

Admin rules match a tool glob **and** the call's arguments::

    [[rules]]
    tool = "email.send"
    recipients = ["*@example.com"]   # every recipient must match
    level = "CONFIRM"

The first matching rule decides the admin level; when none matches, the tool's
default (``[defaults]``, else the catalogue's) applies. A rule may ``deny``.

Shell commands are matched two ways. ``invocations`` (``["rm -r -f", "sudo"]``)
are patterns over the *parsed* command (``overseer_firewall.domain.shell``):
any program it would run, wrappers and substitutions included, with its
options however spelled (``rm -fr``, ``rm --recursive --force``, ``/bin/rm -Rf``,
``xargs rm -rf`` all match ``rm -r -f``). ``commands`` are globs over the
whitespace-normalised text, kept for old policies. A rule that would *lower* a
shell command below the tool's default matches only when every program the
command runs matches (invocations) and nothing unknown runs, or (commands) the
text has no shell metacharacters: ``ls; rm -rf ~`` is not ``ls *``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from overseer_firewall.domain.levels import Level, stricter
from overseer_firewall.domain.shell import (
    InvocationPattern,
    ParsedCommand,
    all_match,
    matching,
    parse_command,
    parse_pattern,
)
from overseer_firewall.domain.tools import BUILTIN_CATALOGUE, ToolCatalogue, ToolSpec, spec_from_mapping

JSON = dict[str, Any]
Matcher = Callable[[str], Any]

_SHELL_META = re.compile(r"[;&|`<>\n\r]|\$\(|\$\{")
_ADDRESS_IN_BRACKETS = re.compile(r"<([^<>]+)>")


class PolicyError(ValueError):
    """An admin policy that does not validate; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid policy: " + "; ".join(problems))
        self.problems = problems


def glob_matcher(pattern: str, *, ignore_case: bool = False) -> Matcher:
    """A compiled fnmatch pattern (``*`` also matches ``/``)."""
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(fnmatch.translate(pattern), flags).match


# ------------------------------------------------------------------ argument facts ---
@dataclass(frozen=True, slots=True)
class CallFacts:
    """What admin rules look at in a call: its paths, recipients and command, normalised once."""

    paths: tuple[str, ...] = ()
    recipients: tuple[str, ...] = ()
    command: str | None = None
    command_has_meta: bool = False
    parsed: ParsedCommand | None = None


def recipient_address(raw: str) -> str:
    """``"Bob <Bob@Example.com>"`` → ``"bob@example.com"``."""
    found = _ADDRESS_IN_BRACKETS.search(raw)
    return (found.group(1) if found else raw).strip().lower()


def call_facts(spec: ToolSpec | None, args: Mapping[str, Any]) -> CallFacts:
    if spec is None:
        return CallFacts()
    paths: list[str] = []
    for path_arg in spec.path_args:
        value = args.get(path_arg.name, path_arg.default)
        if isinstance(value, str):
            paths.append(value)
    recipients: list[str] = []
    for name in spec.recipient_args:
        value = args.get(name)
        if isinstance(value, str):
            recipients.extend(recipient_address(part) for part in value.split(",") if part.strip())
        elif isinstance(value, list):
            recipients.extend(recipient_address(v) for v in value if isinstance(v, str))
    command = None
    has_meta = False
    parsed = None
    if spec.command_arg is not None:
        raw = args.get(spec.command_arg)
        if isinstance(raw, str):
            command = " ".join(raw.split())
            has_meta = _SHELL_META.search(raw) is not None
            parsed = parse_command(raw)
    return CallFacts(tuple(paths), tuple(recipients), command, has_meta, parsed)


def normalise_match_path(path: str) -> str:
    """How a path looks to a rule: no leading ``./``, no doubled or trailing slashes."""
    while path.startswith("./"):
        path = path[2:]
    parts = [p for p in path.split("/") if p and p != "."]
    return ("/" if path.startswith("/") else "") + "/".join(parts)


# ------------------------------------------------------------------------- rules ---
@dataclass(frozen=True, slots=True)
class PolicyRule:
    tool: str
    level: Level | None = None
    deny: bool = False
    paths: tuple[str, ...] = ()
    recipients: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    invocations: tuple[str, ...] = ()
    name: str = ""
    reason: str = ""
    _tool: Matcher = field(init=False, repr=False, compare=False)
    _paths: tuple[Matcher, ...] = field(init=False, repr=False, compare=False)
    _recipients: tuple[Matcher, ...] = field(init=False, repr=False, compare=False)
    _commands: tuple[Matcher, ...] = field(init=False, repr=False, compare=False)
    _invocations: tuple[InvocationPattern, ...] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __hash__(self) -> int:  # cached: rules key the permission layer's finding cache
        return self._hash

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "_hash",
            hash(
                (
                    self.tool,
                    self.level,
                    self.deny,
                    self.paths,
                    self.recipients,
                    self.commands,
                    self.invocations,
                    self.name,
                )
            ),
        )
        object.__setattr__(self, "_tool", glob_matcher(self.tool))
        object.__setattr__(self, "_paths", tuple(glob_matcher(normalise_match_path(p)) for p in self.paths))
        recipients = tuple(r if "@" in r else f"*@{r}" for r in self.recipients)
        object.__setattr__(self, "_recipients", tuple(glob_matcher(r, ignore_case=True) for r in recipients))
        object.__setattr__(self, "_commands", tuple(glob_matcher(" ".join(c.split())) for c in self.commands))
        object.__setattr__(self, "_invocations", tuple(parse_pattern(p) for p in self.invocations))

    @property
    def label(self) -> str:
        return self.name or f"{self.tool} rule"

    def matches_tool(self, tool: str) -> bool:
        return self._tool(tool) is not None

    @property
    def conditional(self) -> bool:
        """Whether the rule looks at arguments, not only at the tool name."""
        return bool(self.paths or self.recipients or self.commands or self.invocations)

    def matches(self, tool: str, facts: CallFacts, default: Level) -> bool:
        return self._tool(tool) is not None and self.matches_args(facts, default)

    def matches_args(self, facts: CallFacts, default: Level) -> bool:
        if self._paths and not (
            facts.paths and all(any(m(normalise_match_path(p)) for m in self._paths) for p in facts.paths)
        ):
            return False
        if self._recipients and not (
            facts.recipients and all(any(m(r) for m in self._recipients) for r in facts.recipients)
        ):
            return False
        if self._commands:
            if facts.command is None or not any(m(facts.command) for m in self._commands):
                return False
            if self._lowers(default) and facts.command_has_meta:
                return False
        if self._invocations:
            parsed = facts.parsed
            if parsed is None:
                return False
            if self._lowers(default):
                return all_match(self._invocations, parsed)
            return matching(self._invocations, parsed) is not None
        return True

    def _lowers(self, default: Level) -> bool:
        return not self.deny and self.level is not None and self.level < default

    def as_dict(self) -> JSON:
        out: JSON = {"tool": self.tool}
        if self.name:
            out["name"] = self.name
        if self.deny:
            out["deny"] = True
        if self.level is not None:
            out["level"] = self.level.name
        for key in ("paths", "recipients", "commands", "invocations"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        if self.reason:
            out["reason"] = self.reason
        return out


# -------------------------------------------------------------------- thresholds ---
@dataclass(frozen=True, slots=True)
class LoopThresholds:
    """L2: a hold when the same call repeats, one tool floods, or two calls alternate."""

    same_args: int = 3
    same_tool: int = 8
    window_seconds: float = 120.0
    oscillation: bool = True
    low_confidence: float = 0.5
    confidence_window: int = 3


@dataclass(frozen=True, slots=True)
class BreakerThresholds:
    """L5: a hold after K proposals in a row below a confidence, or on stagnation."""

    low_confidence: float = 0.4
    consecutive: int = 3
    stagnation: int = 2


@dataclass(frozen=True, slots=True)
class AdaptiveThresholds:
    rejections_to_escalate: int = 3
    approvals_to_relax: int = 5
    hesitation_ms: float = 30_000.0
    rubber_stamp_count: int = 5
    rubber_stamp_ms: float = 1_500.0


TIMEOUT_RULES = ("deny", "reject")


@dataclass(frozen=True, slots=True)
class TimeoutRule:
    """A held call unanswered for ``escalate_after_seconds`` goes to an admin; after
    ``decide_after_seconds`` the rule decides (``deny``: the contract times out; ``reject``)."""

    escalate_after_seconds: float = 900.0
    decide_after_seconds: float = 3_600.0
    on_timeout: str = "deny"


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """Where tools may read and write.

    Placeholders: ``{sandbox}`` (``OVERSEER_HOME/sandbox``), ``{cwd}`` (the working directory), ``{home}``.
    """

    readable_paths: tuple[str, ...] = ("{sandbox}", "{cwd}")
    output_dir: str = "."


# ---------------------------------------------------------------------- admin ---
@dataclass(frozen=True, slots=True)
class AdminPolicy:
    version: int = 0
    defaults: tuple[tuple[str, Level], ...] = ()
    rules: tuple[PolicyRule, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_sources: tuple[tuple[str, JSON], ...] = ()
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    loops: LoopThresholds = field(default_factory=LoopThresholds)
    breaker: BreakerThresholds = field(default_factory=BreakerThresholds)
    adaptive: AdaptiveThresholds = field(default_factory=AdaptiveThresholds)
    timeouts: tuple[tuple[Level, TimeoutRule], ...] = ()
    _defaults: tuple[tuple[Matcher, Level], ...] = field(init=False, repr=False, compare=False)
    _plans: dict[str, tuple[Level, tuple[PolicyRule, ...]]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_defaults", tuple((glob_matcher(g), lvl) for g, lvl in self.defaults))
        object.__setattr__(self, "_plans", {})

    def default_level(self, tool: str, spec: ToolSpec | None) -> Level:
        """The admin floor of a tool before argument rules: ``[defaults]``, else the catalogue's."""
        for matcher, level in self._defaults:
            if matcher(tool) is not None:
                return level if spec is not None else max(level, Level.CONFIRM)
        return Level.CONFIRM if spec is None else spec.default_level

    def _plan(self, tool: str, spec: ToolSpec | None) -> tuple[Level, tuple[PolicyRule, ...]]:
        """The tool's default and the rules whose tool glob matches it, worked out once per tool name."""
        key = tool if spec is not None else "\x00" + tool
        plan = self._plans.get(key)
        if plan is None:
            plan = (self.default_level(tool, spec), tuple(r for r in self.rules if r.matches_tool(tool)))
            if len(self._plans) < 4096:
                self._plans[key] = plan
        return plan

    def judge(
        self, tool: str, spec: ToolSpec | None, args: Mapping[str, Any]
    ) -> tuple[Level, bool, PolicyRule | None]:
        """(admin level, denied, the rule that decided or None) for one call."""
        default, rules = self._plan(tool, spec)
        facts: CallFacts | None = None
        for rule in rules:
            if rule.conditional:
                if facts is None:
                    facts = call_facts(spec, args)
                if not rule.matches_args(facts, default):
                    continue
            if rule.deny:
                return default, True, rule
            assert rule.level is not None
            level = rule.level if spec is not None else max(rule.level, Level.CONFIRM)
            return level, False, rule
        return default, False, None

    def timeout_rule(self, level: Level) -> TimeoutRule:
        for lvl, rule in self.timeouts:
            if lvl is level:
                return rule
        return TimeoutRule()

    def with_version(self, version: int) -> AdminPolicy:
        return replace(self, version=version)

    def as_dict(self) -> JSON:
        """The policy as a TOML-shaped mapping; ``parse_admin_policy(p.as_dict())`` equals ``p``."""
        out: JSON = {
            "defaults": {glob: level.name for glob, level in self.defaults},
            "rules": [rule.as_dict() for rule in self.rules],
            "sandbox": {
                "readable_paths": list(self.sandbox.readable_paths),
                "output_dir": self.sandbox.output_dir,
            },
            "loops": _fields(self.loops),
            "breaker": _fields(self.breaker),
            "adaptive": _fields(self.adaptive),
            "timeouts": {level.name: _fields(rule) for level, rule in self.timeouts},
        }
        if self.tool_sources:
            out["tools"] = {name: dict(source) for name, source in self.tool_sources}
        return out


def _fields(obj: Any) -> JSON:
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__ if not name.startswith("_")}


_TOP_KEYS = {"version", "defaults", "rules", "tools", "sandbox", "loops", "breaker", "adaptive", "timeouts"}
_RULE_KEYS = {"tool", "level", "deny", "paths", "recipients", "commands", "invocations", "name", "reason"}


def _section(raw: Mapping[str, Any], key: str, cls: Any, problems: list[str]) -> Any:
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        problems.append(f"[{key}] must be a table")
        return cls()
    known = {name for name in cls.__dataclass_fields__ if not name.startswith("_")}
    kwargs: JSON = {}
    for name, item in value.items():
        if name not in known:
            problems.append(f"[{key}] has an unknown key {name!r} (known: {', '.join(sorted(known))})")
            continue
        expected = type(getattr(cls(), name))
        if expected is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        if expected is tuple and isinstance(item, list):
            item = tuple(item)
        if not isinstance(item, expected) or (expected is int and isinstance(item, bool)):
            problems.append(f"[{key}].{name} must be {expected.__name__}")
            continue
        if expected in (int, float) and item < 0:
            problems.append(f"[{key}].{name} must not be negative")
            continue
        kwargs[name] = item
    return cls(**kwargs)


def _strings(value: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(f"{where} must be a list of non-empty strings")
        return ()
    return tuple(value)


def parse_admin_policy(raw: Mapping[str, Any], *, version: int = 0) -> AdminPolicy:
    """Validate a TOML-shaped mapping into an :class:`AdminPolicy`; raises :class:`PolicyError`."""
    problems: list[str] = []
    if not isinstance(raw, Mapping):
        raise PolicyError(["a policy must be a table"])
    raw = {k: v for k, v in raw.items() if k != "version"}  # the store numbers versions itself
    for key in raw:
        if key not in _TOP_KEYS:
            problems.append(f"unknown top-level key {key!r} (known: {', '.join(sorted(_TOP_KEYS))})")

    defaults: list[tuple[str, Level]] = []
    raw_defaults = raw.get("defaults", {})
    if not isinstance(raw_defaults, Mapping):
        problems.append("[defaults] must be a table of tool glob = level")
    else:
        for glob, text in raw_defaults.items():
            try:
                defaults.append((str(glob), Level.parse(str(text))))
            except ValueError as exc:
                problems.append(f"[defaults].{glob}: {exc}")

    rules: list[PolicyRule] = []
    raw_rules = raw.get("rules", [])
    if not isinstance(raw_rules, list):
        problems.append("[[rules]] must be an array of tables")
        raw_rules = []
    for i, item in enumerate(raw_rules):
        where = f"rules[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{where} must be a table")
            continue
        unknown = set(item) - _RULE_KEYS
        if unknown:
            problems.append(f"{where} has unknown keys {sorted(unknown)}")
        tool = item.get("tool")
        if not isinstance(tool, str) or not tool:
            problems.append(f"{where}.tool must be a tool name or glob")
            continue
        deny = item.get("deny", False)
        if not isinstance(deny, bool):
            problems.append(f"{where}.deny must be true or false")
            continue
        level: Level | None = None
        if "level" in item:
            try:
                level = Level.parse(str(item["level"]))
            except ValueError as exc:
                problems.append(f"{where}.level: {exc}")
                continue
        if deny == (level is not None):
            problems.append(f"{where} needs exactly one of level or deny = true")
            continue
        invocations = _strings(item.get("invocations"), f"{where}.invocations", problems)
        bad = False
        for pattern in invocations:
            try:
                parse_pattern(pattern)
            except ValueError as exc:
                problems.append(f"{where}.invocations: {exc}")
                bad = True
        if bad:
            continue
        rules.append(
            PolicyRule(
                tool=tool,
                level=level,
                deny=deny,
                paths=_strings(item.get("paths"), f"{where}.paths", problems),
                recipients=tuple(
                    r.lower() for r in _strings(item.get("recipients"), f"{where}.recipients", problems)
                ),
                commands=_strings(item.get("commands"), f"{where}.commands", problems),
                invocations=invocations,
                name=str(item.get("name", "")),
                reason=str(item.get("reason", "")),
            )
        )

    tools: list[ToolSpec] = []
    sources: list[tuple[str, JSON]] = []
    raw_tools = raw.get("tools", {})
    if not isinstance(raw_tools, Mapping):
        problems.append("[tools] must be a table of tool name = declaration")
    else:
        for name, declared in raw_tools.items():
            if isinstance(declared, str):  # shorthand: tools."fs.write" = "CONFIRM" is a default level
                try:
                    defaults.append((str(name), Level.parse(declared)))
                except ValueError as exc:
                    problems.append(f"tools.{name}: {exc}")
                continue
            if name in BUILTIN_CATALOGUE:
                problems.append(f"tools.{name}: a built-in tool cannot be redeclared")
                continue
            if not isinstance(declared, Mapping):
                problems.append(f"tools.{name} must be a table")
                continue
            try:
                tools.append(spec_from_mapping(str(name), declared))
                sources.append((str(name), dict(declared)))
            except ValueError as exc:
                problems.append(str(exc))

    sandbox = raw.get("sandbox", {})
    sandbox_policy = SandboxPolicy()
    if not isinstance(sandbox, Mapping):
        problems.append("[sandbox] must be a table")
    else:
        unknown = set(sandbox) - {"readable_paths", "output_dir"}
        if unknown:
            problems.append(f"[sandbox] has unknown keys {sorted(unknown)}")
        readable = _strings(
            sandbox.get("readable_paths", ["{sandbox}", "{cwd}"]), "[sandbox].readable_paths", problems
        )
        output_dir = sandbox.get("output_dir", ".")
        if not isinstance(output_dir, str) or output_dir.startswith("/") or ".." in output_dir.split("/"):
            problems.append("[sandbox].output_dir must be a relative path inside the sandbox")
            output_dir = "."
        sandbox_policy = SandboxPolicy(readable, output_dir)

    loops = _section(raw, "loops", LoopThresholds, problems)
    breaker = _section(raw, "breaker", BreakerThresholds, problems)
    adaptive = _section(raw, "adaptive", AdaptiveThresholds, problems)

    timeouts: list[tuple[Level, TimeoutRule]] = []
    raw_timeouts = raw.get("timeouts", {})
    if not isinstance(raw_timeouts, Mapping):
        problems.append("[timeouts] must be a table of level = {...}")
    else:
        for level_name, rule_raw in raw_timeouts.items():
            try:
                level = Level.parse(str(level_name))
            except ValueError as exc:
                problems.append(f"[timeouts].{level_name}: {exc}")
                continue
            rule = _section({"t": rule_raw}, "t", TimeoutRule, problems)
            if rule.on_timeout not in TIMEOUT_RULES:
                problems.append(
                    f"[timeouts.{level.name}].on_timeout must be one of {', '.join(TIMEOUT_RULES)}"
                )
            elif rule.decide_after_seconds < rule.escalate_after_seconds:
                problems.append(
                    f"[timeouts.{level.name}]: decide_after_seconds is before escalate_after_seconds"
                )
            else:
                timeouts.append((level, rule))

    if problems:
        raise PolicyError(problems)
    return AdminPolicy(
        version=version,
        defaults=tuple(defaults),
        rules=tuple(rules),
        tools=tuple(tools),
        tool_sources=tuple(sources),
        sandbox=sandbox_policy,
        loops=loops,
        breaker=breaker,
        adaptive=adaptive,
        timeouts=tuple(timeouts),
    )


# ----------------------------------------------------------------------- user ---
@dataclass(frozen=True, slots=True)
class UserLevel:
    """A user-layer override: the level, the level it replaced (for relaxing back) and why."""

    level: Level
    previous: Level | None
    trigger: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class UserPolicy:
    levels: Mapping[str, UserLevel] = field(default_factory=dict)
    version: int = 0

    def level(self, tool: str) -> Level | None:
        entry = self.levels.get(tool)
        return entry.level if entry is not None else None


def evolve_user(
    user: UserPolicy, *, tool: str, before: Level | None, after: Level | None, trigger: str, hint: str | None
) -> UserPolicy:
    """Fold one ``policy.user_level_changed`` into the user layer.

    ``previous`` remembers the level in force before the first escalation, so a
    later relaxation returns there, not to an intermediate step.
    """
    levels = dict(user.levels)
    current = levels.get(tool)
    if after is None:
        levels.pop(tool, None)
    else:
        previous: Level | None
        if current is None:
            previous = before
        elif after > current.level:
            previous = current.previous
        elif after < current.level:
            previous = None
        else:
            previous = current.previous
        levels[tool] = UserLevel(after, previous, trigger, hint)
    return UserPolicy(levels, user.version + 1)


# ---------------------------------------------------------------------- store ---
@dataclass(frozen=True, slots=True)
class LevelJudgement:
    level: Level
    admin: Level
    user: Level | None
    denied: bool
    rule: PolicyRule | None


@dataclass(frozen=True, slots=True)
class PolicyStore:
    """Both layers plus the catalogue they apply to. Immutable: changes return a new store."""

    admin: AdminPolicy = field(default_factory=AdminPolicy)
    user: UserPolicy = field(default_factory=UserPolicy)
    base_catalogue: ToolCatalogue = BUILTIN_CATALOGUE
    catalogue: ToolCatalogue = field(init=False)

    def __post_init__(self) -> None:
        cat = self.base_catalogue.extended(self.admin.tools) if self.admin.tools else self.base_catalogue
        object.__setattr__(self, "catalogue", cat)

    @property
    def version(self) -> int:
        """Grows with every admin replacement and every user-layer change."""
        return self.admin.version + self.user.version

    def judge(self, tool: str, spec: ToolSpec | None, args: Mapping[str, Any]) -> LevelJudgement:
        admin, denied, rule = self.admin.judge(tool, spec, args)
        user = self.user.level(tool)
        level = stricter(admin, user)
        assert level is not None
        return LevelJudgement(level, admin, user, denied, rule)

    def with_admin(self, admin: AdminPolicy) -> PolicyStore:
        return PolicyStore(admin, self.user, self.base_catalogue)

    def with_user_change(
        self, *, tool: str, before: Level | None, after: Level | None, trigger: str, hint: str | None = None
    ) -> PolicyStore:
        user = evolve_user(self.user, tool=tool, before=before, after=after, trigger=trigger, hint=hint)
        return PolicyStore(self.admin, user, self.base_catalogue)

    def describe(self) -> JSON:
        """``GET /v1/policy``: the admin layer, the user layer, and the effective level per tool."""
        tools = {}
        for spec in self.catalogue.specs():
            admin = self.admin.default_level(spec.name, spec)
            user = self.user.level(spec.name)
            effective = stricter(admin, user)
            assert effective is not None
            tools[spec.name] = {
                "admin": admin.name,
                "user": user.name if user is not None else None,
                "effective": effective.name,
                "irreversible": spec.irreversible,
                "read_only": spec.read_only,
                "rules": [r.label for r in self.admin.rules if r.matches_tool(spec.name)],
            }
        return {
            "version": self.version,
            "admin": {"version": self.admin.version, **self.admin.as_dict()},
            "user": {
                "version": self.user.version,
                "levels": {
                    tool: {
                        "level": entry.level.name,
                        "previous": entry.previous.name if entry.previous is not None else None,
                        "trigger": entry.trigger,
                        "hint": entry.hint,
                    }
                    for tool, entry in sorted(self.user.levels.items())
                },
            },
            "tools": tools,
        }
