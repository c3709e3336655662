"""The gateway's configuration, typed: ``[gateway]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the models
declare none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

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


ChannelKind = Literal["webhook", "email", "unknown"]


class SmtpSettings(Section):
    """``[channels.smtp]``: the mail server approval notices are sent through."""

    host: str
    port: int = Field(ge=0, le=65535)
    sender: str = Field(min_length=3)
    timeout_seconds: float = Field(gt=0)


class WebhookChannel(Section):
    """``[channels.webhook.<name>]``: a signed JSON POST of the approval card to ``url``."""

    url: str = Field(pattern=r"^https?://")
    # HMAC-SHA256 key of the Overseer-Signature header; set it from the environment
    # (OVERSEER_CHANNELS__WEBHOOK__<NAME>__SECRET), never in a file others read.
    secret: str = Field(min_length=16)
    # "overseer": the card as JSON; "slack": a Slack-compatible message (text and blocks).
    format: Literal["overseer", "slack"] = "overseer"
    # The principal the approve and reject links act as (a name from the gateway's tokens or
    # [gateway.principals]); none: the notice carries no links.
    approver: str | None = None


class EmailChannel(Section):
    """``[channels.email.<name>]``: the card as a readable mail to each recipient, with links that act as them."""

    # Principal name → mail address; each recipient's links act as that principal.
    to: dict[str, str] = Field(min_length=1)


class ChannelsSettings(Section):
    """``[channels]``: where the approval channels the admin policy's ``[[notify]]`` routes name are."""

    # The gateway's address as approvers reach it (the links point there); empty: the gateway's own.
    public_url: str
    link_ttl_seconds: int = Field(gt=0)
    # The key approval links are signed with; empty: $OVERSEER_HOME/link.key (written, 0600, when missing).
    link_secret: str
    attempts: int = Field(ge=1)
    retry_base_seconds: float = Field(gt=0)
    retry_max_seconds: float = Field(gt=0)
    timeout_seconds: float = Field(gt=0)
    poll_seconds: float = Field(gt=0)
    smtp: SmtpSettings
    webhook: dict[str, WebhookChannel]
    email: dict[str, EmailChannel]

    @model_validator(mode="after")
    def _one_name_one_channel(self) -> Self:
        both = sorted(self.webhook.keys() & self.email.keys())
        if both:
            raise ValueError(f"a channel name names one channel, not a webhook and a mail list: {both}")
        return self

    def kind_of(self, channel: str) -> ChannelKind:
        if channel in self.webhook:
            return "webhook"
        return "email" if channel in self.email else "unknown"
