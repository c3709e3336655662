"""The gateway's ``[gateway]`` section, validated once at start; every default is in overseer.toml."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from overseer_gateway.domain.access import Role


class PrincipalSettings(BaseModel):
    """``[gateway.principals.<name>]``: a named person with a role and a bearer token."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    token: str = Field(min_length=1)


class GatewaySettings(BaseModel):
    """What the gateway reads of the configuration (overseer.toml documents each key)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = Field(ge=0, le=65535)
    tokens_file: str
    principals: dict[str, PrincipalSettings]
    max_body_bytes: int = Field(gt=0)
    max_json_depth: int
    max_wait_seconds: float = Field(ge=0)
    rpc_timeout_seconds: float = Field(gt=0)
    health_timeout_seconds: float = Field(gt=0)
    ws_queue_size: int = Field(gt=0)
    ws_slow_client_seconds: float = Field(gt=0)
    ws_poll_seconds: float = Field(gt=0)
    log_level: str
    access_log: bool
