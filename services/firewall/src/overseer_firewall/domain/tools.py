"""The tools the firewall knows: schema, risk flags and default level of each.

The catalogue is what the executor announces it can run (its built-ins and every MCP server's tools,
:class:`Announced`), with the firewall's own, richer declarations of the built-ins (which arguments
are paths, recipients, a shell command). An announced tool's default level follows from what it says
of itself, by the admin policy's ``[catalogue]`` levels (read-only, destructive, neither said).

A tool outside the catalogue is *unknown*: the firewall cannot validate its arguments or judge its
effects, so it is held at CONFIRM at least (fail-closed). A tool the executor announced once and no
longer offers is *withdrawn*: nobody can run it, so a call of it is refused with why.
Schemas are compiled once with fastjsonschema, so validating a call costs a
function call, not a schema walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import fastjsonschema

from overseer_firewall.domain.levels import Level

JSON = dict[str, Any]
Validator = Callable[[Any], Any]


class PathAccess(StrEnum):
    READ = "read"
    WRITE = "write"
    CWD = "cwd"


@dataclass(frozen=True, slots=True)
class PathArg:
    """An argument naming a file system location, and how the tool uses it."""

    name: str
    access: PathAccess
    default: str | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    schema: JSON
    irreversible: bool = False
    idempotent: bool = False
    read_only: bool = False
    default_level: Level = Level.CONFIRM
    path_args: tuple[PathArg, ...] = ()
    recipient_args: tuple[str, ...] = ()
    command_arg: str | None = None
    description: str = ""
    # Where the declaration comes from: "builtin" (the firewall's own), "policy" (the admin file), or
    # what the executor announced ("mcp:<server>"); an announced tool's level follows its hints.
    source: str = "builtin"
    destructive: bool | None = None  # what an announced tool says of itself (None: nothing)
    properties: frozenset[str] = field(init=False)
    required: tuple[str, ...] = field(init=False)
    validate: Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        props = self.schema.get("properties", {})
        object.__setattr__(self, "properties", frozenset(props))
        object.__setattr__(self, "required", tuple(self.schema.get("required", ())))
        object.__setattr__(self, "validate", fastjsonschema.compile(self.schema))

    def as_dict(self) -> JSON:
        return {
            "name": self.name,
            "schema": self.schema,
            "irreversible": self.irreversible,
            "idempotent": self.idempotent,
            "read_only": self.read_only,
            "default_level": self.default_level.name,
            "description": self.description,
            "source": self.source,
        }

    @property
    def announced(self) -> bool:
        """Declared by what the executor announced (its level follows what the tool says of itself)."""
        return self.source not in ("builtin", "policy")


def _object(properties: JSON, required: Iterable[str] = ()) -> JSON:
    return {"type": "object", "properties": properties, "required": list(required)}


_STRING = {"type": "string"}
_PATH = {"type": "string", "minLength": 1, "maxLength": 4096}
# One bare address per string: no spaces, one @, and no control characters (C0, DEL, C1): a NUL or a
# CRLF in a recipient could cut the SMTP command short or smuggle in a recipient nobody approved.
_ADDRESS = {
    "type": "string",
    "minLength": 3,
    "maxLength": 320,
    "pattern": r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@\s\x00-\x1f\x7f-\x9f]+$",
}
_ADDRESSES = {"anyOf": [_ADDRESS, {"type": "array", "items": _ADDRESS, "minItems": 1}]}
_HEADER_TEXT = {"type": "string", "maxLength": 998, "pattern": r"^[^\x00-\x1f\x7f-\x9f]*$"}

BUILTIN_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "fs.read",
        _object(
            {"path": _PATH, "max_bytes": {"type": "integer", "minimum": 1, "maximum": 10_000_000}}, ["path"]
        ),
        idempotent=True,
        read_only=True,
        default_level=Level.AUTO,
        path_args=(PathArg("path", PathAccess.READ),),
        description="Read a text file inside the sandbox (or a readable path).",
    ),
    ToolSpec(
        "fs.list",
        _object({"path": _PATH}),
        idempotent=True,
        read_only=True,
        default_level=Level.AUTO,
        path_args=(PathArg("path", PathAccess.READ, default="."),),
        description="List a directory inside the sandbox (or a readable path).",
    ),
    ToolSpec(
        "fs.write",
        _object({"path": _PATH, "content": _STRING}, ["path", "content"]),
        idempotent=True,
        default_level=Level.NOTIFY,
        path_args=(PathArg("path", PathAccess.WRITE),),
        description="Write a text file; the path is rewritten into the sandbox output directory.",
    ),
    ToolSpec(
        "email.send",
        _object(
            {
                "to": _ADDRESSES,
                "cc": _ADDRESSES,
                "subject": _HEADER_TEXT,
                "body": _STRING,
                "reply_to": _ADDRESS,
            },
            ["to", "subject", "body"],
        ),
        irreversible=True,
        default_level=Level.APPROVE,
        recipient_args=("to", "cc"),
        description="Send an e-mail over SMTP.",
    ),
    ToolSpec(
        "shell.run",
        _object(
            {
                "command": {"type": "string", "minLength": 1, "maxLength": 8192},
                "timeout_seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
            },
            ["command"],
        ),
        irreversible=True,
        default_level=Level.APPROVE,
        command_arg="command",
        description="Run a shell command with the sandbox as its working directory, with a time limit.",
    ),
)


class ToolCatalogue:
    """Name → :class:`ToolSpec`, the tools withdrawn (name → why), and the tools that changed since an
    admin accepted them (name → what changed: held at CONFIRM or above until one accepts the change).
    Immutable once built; ``extended`` and ``accepted`` return a new catalogue."""

    __slots__ = ("_specs", "unreviewed", "withdrawn")

    def __init__(
        self,
        specs: Iterable[ToolSpec] = BUILTIN_TOOLS,
        withdrawn: Mapping[str, str] | None = None,
        unreviewed: Mapping[str, str] | None = None,
    ) -> None:
        self._specs: dict[str, ToolSpec] = {spec.name: spec for spec in specs}
        self.withdrawn: Mapping[str, str] = {
            name: why for name, why in (withdrawn or {}).items() if name not in self._specs
        }
        self.unreviewed: Mapping[str, str] = dict(unreviewed or {})

    def get(self, name: str | None) -> ToolSpec | None:
        return self._specs.get(name) if name is not None else None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[ToolSpec]:
        return [self._specs[name] for name in sorted(self._specs)]

    def extended(self, specs: Iterable[ToolSpec]) -> ToolCatalogue:
        return ToolCatalogue([*self._specs.values(), *specs], self.withdrawn, self.unreviewed)

    def accepted(self, tool: str) -> ToolCatalogue:
        """This catalogue once an admin accepted how ``tool`` changed."""
        unreviewed = {name: why for name, why in self.unreviewed.items() if name != tool}
        return ToolCatalogue(self._specs.values(), self.withdrawn, unreviewed)


@dataclass(frozen=True, slots=True)
class Announced:
    """A tool as the executor announced it: its schema, where it comes from, what it says of itself."""

    name: str
    schema: JSON
    source: str = "builtin"
    description: str = ""
    read_only: bool | None = None
    destructive: bool | None = None
    irreversible: bool = False
    idempotent: bool = False


def spec_from_announced(tool: Announced) -> ToolSpec:
    """The catalogue's declaration of an announced tool; a schema the firewall cannot compile (or that does
    not describe an object) becomes ``{"type": "object"}``: the arguments are then not checked, and the
    tool's level still follows its hints."""
    schema = tool.schema if tool.schema.get("type", "object") == "object" else {"type": "object"}
    common: dict[str, Any] = {
        "irreversible": tool.irreversible,
        "idempotent": tool.idempotent and not tool.irreversible,
        "read_only": bool(tool.read_only),
        "description": tool.description,
        "source": tool.source,
        "destructive": tool.destructive,
    }
    try:
        return ToolSpec(tool.name, schema, **common)
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError):
        return ToolSpec(tool.name, {"type": "object"}, **common)


def catalogue_from(
    announced: Iterable[Announced], withdrawn: Mapping[str, str], unreviewed: Mapping[str, str] | None = None
) -> ToolCatalogue:
    """The built-ins (the firewall's own declarations of the executor's built-in tools) and every other
    tool announced, with the tools withdrawn and those changed since an admin accepted them."""
    builtin = {spec.name for spec in BUILTIN_TOOLS}
    others = [spec_from_announced(tool) for tool in announced if tool.name not in builtin]
    # A built-in is withdrawn only when another source offers its name too (a collision): refused.
    builtins = [spec for spec in BUILTIN_TOOLS if spec.name not in withdrawn]
    return ToolCatalogue([*builtins, *others], withdrawn, unreviewed)


def spec_from_mapping(name: str, raw: Mapping[str, Any]) -> ToolSpec:
    """A tool declared in the admin policy file (``[tools."name"]``); raises ``ValueError`` when malformed."""
    schema = raw.get("schema", {"type": "object"})
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise ValueError("schema must be a JSON schema of type object")
    default_level = Level.parse(str(raw.get("level", "CONFIRM")))
    try:
        return ToolSpec(
            name,
            schema,
            irreversible=bool(raw.get("irreversible", False)),
            idempotent=bool(raw.get("idempotent", False)),
            read_only=bool(raw.get("read_only", False)),
            default_level=default_level,
            description=str(raw.get("description", "")),
            source="policy",
        )
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError) as exc:
        # TypeError: "properties" or "required" of a shape the catalogue cannot read.
        raise ValueError(f"schema is not a valid JSON schema: {exc}") from exc


BUILTIN_CATALOGUE = ToolCatalogue()
