"""The gateway's configuration, typed: ``[gateway]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the models
declare none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from pydantic import Field

from overseer_gateway.domain.access import Role
from overseer_runtime.config import Section


class PrincipalSettings(Section):
    """``[gateway.principals.<name>]``: a named person with a role and a bearer token."""

    role: Role
    token: str = Field(min_length=1)


class GatewaySettings(Section):
    """``[gateway]``, read with ``settings.typed("gateway", GatewaySettings)``; a key it does not know is
    refused."""

    host: str
    port: int = Field(ge=0, le=65535)
    tokens_file: str
    principals: dict[str, PrincipalSettings]
    max_body_bytes: int = Field(gt=0)
    max_json_depth: int
    max_wait_seconds: float = Field(ge=0)
    rpc_timeout_seconds: float = Field(gt=0)
    tools_cache_seconds: float = Field(gt=0)
    health_timeout_seconds: float = Field(gt=0)
    ws_queue_size: int = Field(gt=0)
    ws_slow_client_seconds: float = Field(gt=0)
    ws_poll_seconds: float = Field(gt=0)
    max_message_chars: int = Field(gt=0, le=16_000)
    max_attachments: int = Field(ge=0)
    log_level: str
    access_log: bool
