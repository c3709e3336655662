"""The agent's configuration, typed: ``[reasoning]``.

The defaults live once, in ``overseer_runtime/overseer.toml`` (documented there), so the model
declares none: a key missing from the merged configuration is a configuration error.
"""

from __future__ import annotations

from pydantic import Field

from overseer_runtime.config import Section


class ReasoningSettings(Section):
    """``[reasoning]``, read with ``settings.typed("reasoning", ReasoningSettings)``."""

    # Planner decisions per turn before the agent asks the person whether to go on.
    max_steps: int = Field(ge=1)
    # How long the executor's tool list is kept, in seconds.
    tools_cache_seconds: float = Field(ge=0)


class LlmSettings(Section):
    """``[llm]``: the model behind the agent's planner; with no ``base_url`` and ``model`` the offline
    planner plans. ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``OVERSEER_LLM_MODEL`` set the first three."""

    base_url: str
    api_key: str
    model: str
    # One request's timeout, and the whole call's deadline, retries included (then the agent asks the person).
    timeout_seconds: float = Field(gt=0)
    deadline_seconds: float = Field(gt=0)
    max_retries: int = Field(ge=0, le=10)
    temperature: float = Field(ge=0, le=2)
    # How long the start waits for the server to answer before the offline planner serves instead.
    probe_seconds: float = Field(gt=0)
    # Asked once when the model fails (empty: none).
    fallback_model: str
    # The models that read the message for the normalise and emotion nodes (empty: the built-in rules).
    normalise_model: str
    emotion_model: str
    # The prompt's budget: older messages and long tool results are compacted to fit (0: no limit).
    context_tokens: int = Field(ge=0)

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)
