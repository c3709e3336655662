"""Configuration: ``overseer.toml`` defaults, an optional user file, ``OVERSEER_*`` overrides.

Resolution order (later wins):

1. the packaged defaults (``libs/runtime/src/overseer_runtime/overseer.toml``, documented there);
2. ``$OVERSEER_HOME/overseer.toml`` or the file named by ``OVERSEER_CONFIG``;
3. environment variables ``OVERSEER_<SECTION>__<KEY>`` (``OVERSEER_EXECUTOR__TOOL_TIMEOUT_SECONDS=10``)
   and the top-level shortcuts ``OVERSEER_HOME`` and ``NATS_URL``.

Values from the environment are parsed as TOML scalars when they look like
one (``true``, ``3``, ``1.5``), else kept as strings.

A section is read typed with :meth:`Settings.typed` and a frozen pydantic model that declares no
defaults: they are overseer.toml's, written once. :func:`check_configuration` checks the whole
configuration against every section's model at once (``overseer up`` runs it before starting
anything): an unknown section or key, or a value of the wrong type, is refused with where it was set
and the nearest known name. The platform's own sections are
:attr:`Settings.overseer`, :attr:`Settings.nats` and :attr:`Settings.telemetry`.

The loader is hand-written rather than pydantic-settings: every section, a service's or a tool's
included, is overridable from the environment and read with TOML's scalar types
(``OVERSEER_COL__COL_ENABLED=false`` is ``False``), whereas pydantic-settings applies the
environment only to the fields of one model declared up front, and reads ``os.environ`` alone.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from overseer_events.subjects import DEFAULT_NAMESPACE, Subjects

DEFAULTS_FILE = Path(__file__).with_name("overseer.toml")
LOCAL_NATS_URL = "nats://127.0.0.1:4222"
"""Where a stack looks for NATS when neither the caller, ``NATS_URL`` nor ``[nats] url`` says."""
M = TypeVar("M", bound=BaseModel)


class Section(BaseModel):
    """A typed ``[section]``: immutable; its defaults are overseer.toml's, so a field declares none.

    A key the model does not declare is a typo in the configuration: refused, never ignored.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


class OverseerSettings(Section):
    """``[overseer]``: where the stack keeps its files, and how much it logs."""

    home: str
    log_level: str
    log_format: Literal["text", "json"]


class NatsSettings(Section):
    """``[nats]``: the bus, its streams and the services' consumers (documented in overseer.toml)."""

    url: str
    namespace: str
    replicas: int
    duplicate_window_seconds: float
    pull_batch: int
    heartbeat_seconds: float
    relay_max_in_flight: int
    nak_delay_seconds: float
    max_deliver: int
    ack_wait_seconds: float


class TelemetrySettings(Section):
    """``[telemetry]``: where spans go (see :mod:`overseer_runtime.tracing`)."""

    exporter: Literal["none", "console", "file", "otlp"]


def _parse_scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Settings:
    """The whole configuration as nested dictionaries, plus typed accessors for the common keys."""

    raw: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def overseer(self) -> OverseerSettings:
        return self.typed("overseer", OverseerSettings)

    @cached_property
    def nats(self) -> NatsSettings:
        return self.typed("nats", NatsSettings)

    @cached_property
    def telemetry(self) -> TelemetrySettings:
        return self.typed("telemetry", TelemetrySettings)

    @property
    def home(self) -> Path:
        return Path(self.overseer.home).expanduser().resolve()

    @property
    def nats_url(self) -> str | None:
        """``[nats] url`` (or ``NATS_URL``), None when empty."""
        return self.nats.url or None

    @property
    def subjects(self) -> Subjects:
        """The subjects of this stack's namespace (``[nats] namespace``)."""
        return Subjects(self.nats.namespace or DEFAULT_NAMESPACE)

    def section(self, name: str) -> dict[str, Any]:
        """One ``[section]`` of the configuration (empty when absent)."""
        value = self.raw.get(name, {})
        return dict(value) if isinstance(value, dict) else {}

    def typed(self, name: str, model: type[M]) -> M:
        """``[name]`` validated as ``model``; its defaults are overseer.toml's, so the model declares none."""
        try:
            return model.model_validate(self.section(name))
        except ValidationError as exc:
            raise ValueError(f"[{name}] of the configuration: {exc}") from exc

    def db_path(self, service: str) -> Path:
        return self.home / f"{service}.db"

    def with_overrides(self, overrides: dict[str, Any]) -> Settings:
        return Settings(_merge(self.raw, overrides))


_LLM_VARIABLES = {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": "api_key", "OVERSEER_LLM_MODEL": "model"}


class ConfigurationError(ValueError):
    """Settings no section model accepts: every problem, each with where it was set and the nearest name."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the configuration has problems:\n  " + "\n  ".join(problems))
        self.problems = problems


def check_configuration(
    settings: Settings, models: Mapping[str, type[Section]], env: Mapping[str, str] | None = None
) -> None:
    """Every section and every key of ``settings`` is one that ``models`` declare, of the right type;
    else :class:`ConfigurationError` listing each problem, where it was set (the environment variable,
    else a configuration file) and the nearest known name for a misspelt one. Run before anything starts,
    so a typo is one clear message rather than a service that never gets ready."""
    env = os.environ if env is None else env
    problems: list[str] = []
    for section in sorted(settings.raw):
        if section not in models:
            problems.append(_unknown(section, None, list(models), env))
            continue
        try:
            models[section].model_validate(settings.section(section))
        except ValidationError as exc:
            problems += [_problem(section, error, models[section], env) for error in exc.errors()]
    if problems:
        raise ConfigurationError(problems)


def _where(path: str, env: Mapping[str, str]) -> str:
    """Which environment variable set ``path`` (``OVERSEER_GATEWAY__PORT`` for ``gateway.port``), if one did."""
    section, *keys = path.upper().split(".")
    variable = f"OVERSEER_{section}" + "".join(f"__{key}" for key in keys)
    if variable in env:
        return f"set by {variable}"
    prefix = variable + "__"
    if any(name.startswith(prefix) for name in env):
        return f"set by {prefix}… variables"
    return "set in a configuration file"


def _nearest(name: str, known: list[str]) -> str:
    if not known:
        return ""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else f"; known: {', '.join(sorted(known))}"


def _unknown(section: str, key: str | None, known: list[str], env: Mapping[str, str]) -> str:
    path = section if key is None else f"{section}.{key}"
    what = "section" if key is None else "setting"
    return f"{path}: unknown {what} ({_where(path, env)}){_nearest(key or section, known)}"


def _problem(section: str, error: ErrorDetails, model: type[BaseModel], env: Mapping[str, str]) -> str:
    location = [str(part) for part in error["loc"]]
    path = ".".join([section, *location])
    if error["type"] == "extra_forbidden":
        parent: type[BaseModel] | None = model
        for part in location[:-1]:  # a nested table: its own model's fields
            annotation = (
                parent.model_fields[part].annotation if parent and part in parent.model_fields else None
            )
            parent = (
                annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
            )
        known = list(parent.model_fields) if parent is not None else []
        return f"{path}: unknown setting ({_where(path, env)}){_nearest(location[-1], known)}"
    return f"{path}: {error['msg']}, not {error.get('input')!r} ({_where(path, env)})"


def load_settings(env: dict[str, str] | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    raw = tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))
    home = Path(env.get("OVERSEER_HOME") or raw["overseer"]["home"]).expanduser()
    user_file = Path(env["OVERSEER_CONFIG"]) if env.get("OVERSEER_CONFIG") else home / "overseer.toml"
    if user_file.is_file():
        raw = _merge(raw, tomllib.loads(user_file.read_text(encoding="utf-8")))
    for key, value in env.items():
        if not key.startswith("OVERSEER_") or "__" not in key:
            continue
        section, _, name = key[len("OVERSEER_") :].partition("__")
        path = [section.lower(), *name.lower().split("__")]
        node = raw
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _parse_scalar(value)
    raw["overseer"]["home"] = str(home.resolve())
    if env.get("NATS_URL"):
        raw["nats"]["url"] = env["NATS_URL"]
    for variable, key in _LLM_VARIABLES.items():  # the usual variables of an OpenAI-compatible client
        if env.get(variable):
            raw.setdefault("llm", {})[key] = env[variable]
    if overrides:
        raw = _merge(raw, overrides)
    return Settings(raw)
