"""The firewall's configuration, typed: ``[firewall]`` and the one key of ``[tools]`` it reads.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so these models
declare none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from pydantic import ConfigDict

from overseer_runtime.config import Section


class FirewallSettings(Section):
    """``[firewall]``; a key this model does not know is refused, so a misspelt key is not silently ignored."""

    # The admin policy file that seeds the admin layer of an empty store ("" : the packaged default).
    policy_file: str
    # What {cwd} in the policy's readable_paths means ("" : the firewall's working directory).
    cwd: str
    timer_interval_seconds: float
    warm_events: int
    response_grace_seconds: float
    replay_limit: int
    audit_head_linger_seconds: float


class ToolSandbox(Section):
    """``[tools] sandbox``: where the tools' sandbox is, relative to OVERSEER_HOME.

    The rest of ``[tools]`` belongs to the executor, whose settings check it: here it is ignored.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    sandbox: str
