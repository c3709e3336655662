"""Configuration: ``overseer.toml`` defaults, an optional user file, ``OVERSEER_*`` overrides.

Resolution order (later wins):

1. the packaged defaults (``libs/runtime/src/overseer_runtime/overseer.toml``, documented there);
2. ``$OVERSEER_HOME/overseer.toml`` or the file named by ``OVERSEER_CONFIG``;
3. environment variables ``OVERSEER_<SECTION>__<KEY>`` (``OVERSEER_EXECUTOR__TOOL_TIMEOUT_SECONDS=10``)
   and the top-level shortcuts ``OVERSEER_HOME`` and ``NATS_URL``.

Values from the environment are parsed as TOML scalars when they look like
one (``true``, ``3``, ``1.5``), else kept as strings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

DEFAULTS_FILE = Path(__file__).with_name("overseer.toml")
M = TypeVar("M", bound=BaseModel)


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

    @property
    def home(self) -> Path:
        return Path(self.raw["overseer"]["home"]).expanduser().resolve()

    @property
    def nats_url(self) -> str | None:
        url = self.raw["nats"].get("url") or None
        return str(url) if url else None

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

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.raw
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def db_path(self, service: str) -> Path:
        return self.home / f"{service}.db"

    def with_overrides(self, overrides: dict[str, Any]) -> Settings:
        return Settings(_merge(self.raw, overrides))


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
    if overrides:
        raw = _merge(raw, overrides)
    return Settings(raw)
