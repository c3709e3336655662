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

The file is read by pydantic models (:class:`AdminPolicyFile` and its tables), so
every problem in it is reported at once, located as the file writes it
(``rules[0].level``, ``[loops].same_args``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    Strict,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from overseer_events.notices import NoticeRoute
from overseer_events.policy_fields import NonEmpty, Strings, listed
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


# ------------------------------------------------------------- policy tables ---
class PolicyTable(BaseModel):
    """A table of the admin policy file: its keys are exactly the fields, its values keep their TOML types."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Count = Annotated[int, Strict(), Field(ge=0)]
Amount = Annotated[float, Strict(), Field(ge=0)]  # an integer is a number too; a boolean is neither
Flag = Annotated[bool, Strict()]


def _inside_sandbox(path: str) -> str:
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError("must be a relative path inside the sandbox")
    return path


class LoopThresholds(PolicyTable):
    """L2: a hold when the same call repeats, one tool floods, or two calls alternate."""

    same_args: Count = 3
    same_tool: Count = 8
    window_seconds: Amount = 120.0
    oscillation: Flag = True
    low_confidence: Amount = 0.5
    confidence_window: Count = 3


class BreakerThresholds(PolicyTable):
    """L5: a hold after K proposals in a row below a confidence, or on stagnation."""

    low_confidence: Amount = 0.4
    consecutive: Count = 3
    stagnation: Count = 2


class AdaptiveThresholds(PolicyTable):
    rejections_to_escalate: Count = 3
    approvals_to_relax: Count = 5
    hesitation_ms: Amount = 30_000.0
    rubber_stamp_count: Count = 5
    rubber_stamp_ms: Amount = 1_500.0


class BudgetLimits(PolicyTable):
    """``[budgets]``: what one session may use before its next call is held for a person (0: no limit)."""

    tool_calls_per_session: Count = 0
    model_tokens_per_session: Count = 0


class TimeoutRule(PolicyTable):
    """A held call unanswered for ``escalate_after_seconds`` goes to an admin; after
    ``decide_after_seconds`` the rule decides (``deny``: the contract times out; ``reject``)."""

    escalate_after_seconds: Amount = 900.0
    decide_after_seconds: Amount = 3_600.0
    on_timeout: Literal["deny", "reject"] = "deny"

    @model_validator(mode="after")
    def _decides_after_escalating(self) -> Self:
        if self.decide_after_seconds < self.escalate_after_seconds:
            raise ValueError("decide_after_seconds is before escalate_after_seconds")
        return self


class SandboxPolicy(PolicyTable):
    """Where tools may read and write.

    Placeholders: ``{sandbox}`` (``OVERSEER_HOME/sandbox``), ``{cwd}`` (the working directory), ``{home}``.
    """

    readable_paths: Strings = ("{sandbox}", "{cwd}")
    output_dir: Annotated[str, Strict(), AfterValidator(_inside_sandbox)] = "."


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
    budgets: BudgetLimits = field(default_factory=lambda: BudgetLimits())
    timeouts: tuple[tuple[Level, TimeoutRule], ...] = ()
    catalogue: CatalogueLevels = field(default_factory=lambda: CatalogueLevels())
    # Which held calls reach which approval channel (the gateway sends the notices).
    notify: tuple[NoticeRoute, ...] = ()
    _defaults: tuple[tuple[Matcher, Level], ...] = field(init=False, repr=False, compare=False)
    _plans: dict[str, tuple[Level, tuple[PolicyRule, ...]]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_defaults", tuple((glob_matcher(g), lvl) for g, lvl in self.defaults))
        object.__setattr__(self, "_plans", {})

    def default_level(self, tool: str, spec: ToolSpec | None) -> Level:
        """The admin floor of a tool before argument rules: ``[defaults]``, else for an announced tool the
        ``[catalogue]`` level of what it says of itself, else its declaration's."""
        for matcher, level in self._defaults:
            if matcher(tool) is not None:
                return level if spec is not None else max(level, Level.CONFIRM)
        if spec is None:
            return Level.CONFIRM
        return self.catalogue.level_of(spec) if spec.announced else spec.default_level

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
            "loops": self.loops.model_dump(),
            "breaker": self.breaker.model_dump(),
            "adaptive": self.adaptive.model_dump(),
            "budgets": self.budgets.model_dump(),
            "timeouts": {level.name: rule.model_dump() for level, rule in self.timeouts},
            "catalogue": self.catalogue.as_dict(),
            "notify": [route.model_dump(mode="json") for route in self.notify],
        }
        if self.tool_sources:
            out["tools"] = {name: dict(source) for name, source in self.tool_sources}
        return out


# ------------------------------------------------------------- the admin file ---
def _level(value: Any) -> Level:
    return Level.parse(str(value))


LevelName = Annotated[Level, PlainValidator(_level)]


class CatalogueLevels(PolicyTable):
    """``[catalogue]``: the default level of a tool the executor announces (an MCP server's) that
    ``[defaults]`` does not name, by what the tool says of itself."""

    read_only: LevelName = Level.AUTO  # it says it changes nothing
    destructive: LevelName = Level.APPROVE  # it says it may destroy or overwrite
    unknown: LevelName = Level.CONFIRM  # it says neither

    def level_of(self, spec: ToolSpec) -> Level:
        if spec.read_only:
            return self.read_only
        return self.destructive if spec.destructive else self.unknown

    def as_dict(self) -> JSON:
        return {
            "read_only": self.read_only.name,
            "destructive": self.destructive.name,
            "unknown": self.unknown.name,
        }


def _invocation(pattern: str) -> str:
    parse_pattern(pattern)  # raises ValueError naming what is wrong with the pattern
    return pattern


class RuleEntry(PolicyTable):
    """One ``[[rules]]`` table: a tool glob, argument conditions, and exactly one of ``level`` or ``deny``."""

    tool: NonEmpty
    level: Annotated[Level | None, PlainValidator(_level)] = None
    deny: Flag = False
    paths: Strings = ()
    recipients: Strings = ()
    commands: Strings = ()
    invocations: Annotated[
        tuple[Annotated[NonEmpty, AfterValidator(_invocation)], ...], BeforeValidator(listed)
    ] = ()
    name: Annotated[str, BeforeValidator(str)] = ""
    reason: Annotated[str, BeforeValidator(str)] = ""

    @model_validator(mode="after")
    def _level_or_deny(self) -> Self:
        if self.deny == (self.level is not None):
            raise ValueError("needs exactly one of level or deny = true")
        return self

    def rule(self) -> PolicyRule:
        return PolicyRule(
            tool=self.tool,
            level=self.level,
            deny=self.deny,
            paths=self.paths,
            recipients=tuple(r.lower() for r in self.recipients),
            commands=self.commands,
            invocations=self.invocations,
            name=self.name,
            reason=self.reason,
        )


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """A tool the admin file adds to the catalogue, and its declaration as written."""

    spec: ToolSpec
    source: JSON


def _named(value: Any) -> Any:
    """Pairs each ``[tools]`` entry with its name, which validating a declaration needs."""
    return {name: (name, entry) for name, entry in value.items()} if isinstance(value, Mapping) else value


def _tool_entry(named: tuple[str, Any]) -> Level | DeclaredTool:
    name, entry = named
    if isinstance(entry, str):  # shorthand: tools."fs.write" = "CONFIRM" is a default level
        return Level.parse(entry)
    if name in BUILTIN_CATALOGUE:
        raise ValueError("a built-in tool cannot be redeclared")
    if not isinstance(entry, Mapping):
        raise ValueError("must be a table, or a level")
    return DeclaredTool(spec_from_mapping(name, entry), dict(entry))


class AdminPolicyFile(PolicyTable):
    """The admin policy file as written (``version`` aside: the store numbers versions itself)."""

    defaults: dict[str, LevelName] = Field(default_factory=dict)
    rules: list[RuleEntry] = Field(default_factory=list)
    tools: Annotated[
        dict[str, Annotated[Level | DeclaredTool, PlainValidator(_tool_entry)]], BeforeValidator(_named)
    ] = Field(default_factory=dict)
    sandbox: SandboxPolicy = SandboxPolicy()
    loops: LoopThresholds = LoopThresholds()
    breaker: BreakerThresholds = BreakerThresholds()
    adaptive: AdaptiveThresholds = AdaptiveThresholds()
    budgets: BudgetLimits = BudgetLimits()
    timeouts: dict[LevelName, TimeoutRule] = Field(default_factory=dict)
    catalogue: CatalogueLevels = CatalogueLevels()
    notify: list[NoticeRoute] = Field(default_factory=list)

    def admin_policy(self, version: int) -> AdminPolicy:
        levels = [(name, entry) for name, entry in self.tools.items() if isinstance(entry, Level)]
        declared = [(name, entry) for name, entry in self.tools.items() if isinstance(entry, DeclaredTool)]
        return AdminPolicy(
            version=version,
            defaults=(*self.defaults.items(), *levels),
            rules=tuple(entry.rule() for entry in self.rules),
            tools=tuple(entry.spec for _, entry in declared),
            tool_sources=tuple((name, entry.source) for name, entry in declared),
            sandbox=self.sandbox,
            loops=self.loops,
            breaker=self.breaker,
            adaptive=self.adaptive,
            budgets=self.budgets,
            timeouts=tuple(self.timeouts.items()),
            catalogue=self.catalogue,
            notify=tuple(self.notify),
        )


# The tables an unknown key can be found in, by the top-level key they sit under.
_TABLES: dict[str, type[BaseModel]] = {
    "rules": RuleEntry,
    "sandbox": SandboxPolicy,
    "loops": LoopThresholds,
    "breaker": BreakerThresholds,
    "adaptive": AdaptiveThresholds,
    "budgets": BudgetLimits,
    "timeouts": TimeoutRule,
    "catalogue": CatalogueLevels,
    "notify": NoticeRoute,
}


def _where(loc: tuple[int | str, ...]) -> str:
    """``("rules", 0, "tool")`` → ``rules[0].tool``; ``("loops", "same_args")`` → ``[loops].same_args``."""
    head, rest = loc[0], loc[1:]
    text = str(head) if rest and isinstance(rest[0], int) else f"[{head}]"
    for step in rest:
        text += f"[{step}]" if isinstance(step, int) else f".{step}"
    return text


# Pydantic's complaints in the policy file's terms (a model is a table, a tuple a list of strings).
_PHRASES = {
    "model_type": "must be a table",
    "dict_type": "must be a table",
    "list_type": "must be an array of tables",
    "tuple_type": "must be a list of strings",
    "string_type": "must be a string",
    "string_too_short": "must not be empty",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "greater_than_equal": "must not be negative",
    "literal_error": "must be {expected}",
    "missing": "is missing",
}


def _unknown_key(loc: tuple[int | str, ...]) -> str:
    """An unknown key, with the keys its table does know."""
    if len(loc) == 1:
        names = sorted({*AdminPolicyFile.model_fields, "version"})
        return f"unknown top-level key {loc[0]!r} (known: {', '.join(names)})"
    table = _TABLES.get(str(loc[0]))
    known = f" (known: {', '.join(sorted(table.model_fields))})" if table is not None else ""
    return f"{_where(loc[:-1])} has an unknown key {loc[-1]!r}{known}"


def _problem(error: ErrorDetails) -> str:
    """One validation error, located the way the policy file is written."""
    loc = tuple(step for step in error["loc"] if step != "[key]")
    if error["type"] == "extra_forbidden":
        return _unknown_key(loc)
    phrase = _PHRASES.get(error["type"])
    if error["type"] == "value_error":
        message = str(error["ctx"]["error"])
    else:
        message = phrase.format(**error.get("ctx", {})) if phrase is not None else error["msg"]
    return f"{_where(loc)}: {message}" if loc else message


def parse_admin_policy(raw: Mapping[str, Any], *, version: int = 0) -> AdminPolicy:
    """Validate a TOML-shaped mapping into an :class:`AdminPolicy`; raises :class:`PolicyError`."""
    if not isinstance(raw, Mapping):
        raise PolicyError(["a policy must be a table"])
    try:
        document = AdminPolicyFile.model_validate({k: v for k, v in raw.items() if k != "version"})
    except ValidationError as exc:
        raise PolicyError([_problem(error) for error in exc.errors()]) from None
    return document.admin_policy(version)


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
    if after is None:
        levels.pop(tool, None)
    else:
        levels[tool] = UserLevel(after, previous_level(levels.get(tool), before, after), trigger, hint)
    return UserPolicy(levels, user.version + 1)


def previous_level(current: UserLevel | None, before: Level | None, after: Level) -> Level | None:
    """The level a tool's user-layer entry remembers once it changes to ``after``: the one before the
    first escalation, kept through further escalations and dropped by a relaxation (the read models
    fold ``policy.user_level_changed`` with this too)."""
    if current is None:
        return before
    return current.previous if after >= current.level else None


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

    def with_catalogue(self, catalogue: ToolCatalogue) -> PolicyStore:
        """The store judging from ``catalogue`` (what the executor announced)."""
        return PolicyStore(self.admin, self.user, catalogue)

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
                "source": spec.source,
                "rules": [r.label for r in self.admin.rules if r.matches_tool(spec.name)],
                "unreviewed": self.catalogue.unreviewed.get(spec.name),
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
            "withdrawn": dict(self.catalogue.withdrawn),
            "unreviewed": dict(self.catalogue.unreviewed),
        }
