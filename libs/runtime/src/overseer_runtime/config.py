"""Configuration: ``overseer.toml`` defaults, an optional user file, ``OVERSEER_*`` overrides, read by
pydantic-settings into one typed model.

Resolution order (later wins):

1. the packaged defaults (``libs/runtime/src/overseer_runtime/overseer.toml``, documented there);
2. ``$OVERSEER_HOME/overseer.toml`` or the file named by ``OVERSEER_CONFIG``;
3. environment variables ``OVERSEER_<SECTION>__<KEY>`` (``OVERSEER_EXECUTOR__TOOL_TIMEOUT_SECONDS=10``;
   a list or table as JSON), the top-level shortcuts ``OVERSEER_HOME`` and ``NATS_URL``, and the
   usual variables of an OpenAI-compatible client (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``) with
   ``OVERSEER_LLM_MODEL``.

Every ``[section]`` is a :class:`Section` model that declares no defaults (they are overseer.toml's,
written once), registered by its package under the ``overseer.settings`` entry-point group; the
configuration is one :class:`Configuration` model with a field per section. :func:`load_settings`
validates the whole of it at once: an unknown section or key, or a value of the wrong type, is a
:class:`ConfigurationError` listing every problem with where it was set (the environment variable, else
a configuration file) and the nearest known name. A section overseer.toml knows whose package is not
installed here (one service's image) is passed on unread. The platform's own sections are
:attr:`Settings.overseer`, :attr:`Settings.nats`, :attr:`Settings.telemetry`, :attr:`Settings.partitions` and
:attr:`Settings.priorities`.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, reduce
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from overseer_events.subjects import DEFAULT_NAMESPACE, Subjects
from overseer_runtime.partitions import MAX_PARTITIONS, PARTITIONED_SERVICES, Partition, instance_name

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


class PartitionSettings(Section):
    """``[partitions]``: how many processes share each partitioned service's work, and which one this
    process is (see :mod:`overseer_runtime.partitions`)."""

    executor: int = Field(ge=1, le=MAX_PARTITIONS)
    firewall: int = Field(ge=1, le=MAX_PARTITIONS)
    index: int = Field(ge=0, lt=MAX_PARTITIONS)


class PrioritySettings(Section):
    """``[priorities]``: how far below the stack's CPU priority each service runs (a niceness increment,
    0 to 19): the services off an action's path yield the CPU to those on it when both want it."""

    observer: int = Field(ge=0, le=19)
    col: int = Field(ge=0, le=19)
    reasoning: int = Field(ge=0, le=19)
    firewall: int = Field(ge=0, le=19)
    executor: int = Field(ge=0, le=19)
    gateway: int = Field(ge=0, le=19)


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

    @cached_property
    def partitions(self) -> PartitionSettings:
        return self.typed("partitions", PartitionSettings)

    @cached_property
    def priorities(self) -> PrioritySettings:
        return self.typed("priorities", PrioritySettings)

    def lowered_priority(self, service: str) -> int:
        """How far below the stack's CPU priority ``service`` runs (``[priorities]``; 0 for a name it has not)."""
        return int(getattr(self.priorities, service, 0))

    def partition_counts(self) -> dict[str, int]:
        """How many partitions each partitioned service runs (the others run one)."""
        return {service: int(getattr(self.partitions, service)) for service in PARTITIONED_SERVICES}

    def partition_of(self, service: str) -> Partition:
        """The partition this process runs of ``service`` (``[partitions] index`` of its count)."""
        count = self.partition_counts().get(service, 1)
        return Partition(self.partitions.index if count > 1 else 0, count)

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
        """The store of ``service`` as this process runs it (partition ``k`` > 0: ``<service>.p<k>.db``)."""
        return self.home / f"{instance_name(service, self.partition_of(service).index)}.db"

    def with_overrides(self, overrides: dict[str, Any]) -> Settings:
        """These settings with ``overrides`` on top, validated again."""
        return Settings(_validated(_merge(self.raw, overrides), {}))


_LLM_VARIABLES = {"OPENAI_BASE_URL": "base_url", "OPENAI_API_KEY": "api_key", "OVERSEER_LLM_MODEL": "model"}


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


def _problem(error: ErrorDetails, models: Mapping[str, type[BaseModel]], env: Mapping[str, str]) -> str:
    """One validation error of the configuration model, said where it was set, with the nearest name."""
    section, *location = [str(part) for part in error["loc"]]
    path = ".".join([section, *location])
    if error["type"] == "missing" and not location:
        return f"{path}: the section is missing (set in a configuration file)"
    if error["type"] == "extra_forbidden":
        parent: type[BaseModel] | None = models.get(section)
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


SETTINGS_GROUP = "overseer.settings"
"""The entry-point group under which a package registers its configuration sections (name: Section model)."""


@cache
def section_models() -> dict[str, type[Section]]:
    """Every installed package's configuration sections, by name."""
    return {point.name: point.load() for point in entry_points(group=SETTINGS_GROUP)}


class Configuration(BaseSettings):
    """The whole configuration: a field per section (built by :func:`configuration_model`)."""

    model_config = SettingsConfigDict(
        frozen=True, extra="forbid", env_prefix="OVERSEER_", env_nested_delimiter="__", case_sensitive=False
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # load_settings layers the files and the environment it is given, which need not be os.environ.
        return (init_settings,)


@cache
def configuration_model() -> type[Configuration]:
    """The :class:`Configuration` of the sections installed here."""
    fields: dict[str, Any] = {name: (model, ...) for name, model in section_models().items()}
    return create_model("OverseerConfiguration", __base__=Configuration, **fields)


class _Environment(EnvSettingsSource):
    """``OVERSEER_<SECTION>__<KEY>`` variables of a given environment, read the way pydantic-settings
    reads ``os.environ`` (a test or a supervisor hands a child's environment)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {name.lower(): value for name, value in self._environ.items()}


class ConfigurationError(ValueError):
    """Settings the configuration model does not accept: every problem, each with where it was set and the
    nearest known name."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the configuration has problems:\n  " + "\n  ".join(problems))
        self.problems = problems


@cache
def _shipped() -> dict[str, Any]:
    return tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))


def load_settings(env: Mapping[str, str] | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """The configuration from the packaged defaults, the user's file, ``env`` (``os.environ`` by default)
    and ``overrides``, validated whole; :class:`ConfigurationError` listing every problem."""
    env = dict(os.environ if env is None else env)
    shipped = _shipped()
    home = Path(env.get("OVERSEER_HOME") or shipped["overseer"]["home"]).expanduser()
    user_file = Path(env["OVERSEER_CONFIG"]) if env.get("OVERSEER_CONFIG") else home / "overseer.toml"
    model = configuration_model()
    shortcuts: dict[str, Any] = {"overseer": {"home": str(home.resolve())}}
    if env.get("NATS_URL"):
        shortcuts["nats"] = {"url": env["NATS_URL"]}
    llm = {key: env[variable] for variable, key in _LLM_VARIABLES.items() if env.get(variable)}
    if llm:  # the usual variables of an OpenAI-compatible client
        shortcuts["llm"] = llm
    layers = [
        shipped,
        TomlConfigSettingsSource(model, user_file)() if user_file.is_file() else {},
        _Environment(model, env)(),
        shortcuts,
        overrides or {},
    ]
    return Settings(_validated(reduce(_merge, layers, {}), env))


def _validated(raw: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """``raw`` checked against the configuration model, as the model read it (``"64"`` from the
    environment is ``64``); the sections overseer.toml knows that no installed package reads, as given."""
    models = section_models()
    known = [*models, *(name for name in _shipped() if name not in models)]
    problems = [_unknown(name, None, known, env) for name in raw if name not in known]
    problems += [
        _unknown(name, None, known, env)
        for name in _environment_sections(env)
        if name not in known and name not in raw
    ]
    read = {name: value for name, value in raw.items() if name in models}
    passed_on = {name: value for name, value in raw.items() if name not in models and name in known}
    try:
        validated = configuration_model()(**read).model_dump()
    except ValidationError as exc:
        problems += [_problem(error, models, env) for error in exc.errors()]
        validated = {}
    if problems:
        raise ConfigurationError(problems)
    return {**validated, **passed_on}


def _environment_sections(env: Mapping[str, str]) -> set[str]:
    """The sections ``OVERSEER_<SECTION>__<KEY>`` variables name (pydantic-settings reads known ones only)."""
    return {
        name[len("OVERSEER_") :].partition("__")[0].lower()
        for name in env
        if name.upper().startswith("OVERSEER_") and "__" in name
    }
