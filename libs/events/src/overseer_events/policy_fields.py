"""Field types the admin policy file is written with, shared by every table of it that a service other
than the firewall also reads (the ``[[notify]]`` routes): TOML values kept as they are, a single string
taken for a list of one."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict


def listed(value: Any) -> Any:
    """One string stands for a list of one; an absent (``null``) list is empty."""
    if value is None:
        return ()
    return [value] if isinstance(value, str) else value


NonEmpty = Annotated[str, Strict(), Field(min_length=1)]
Strings = Annotated[tuple[NonEmpty, ...], BeforeValidator(listed)]
"""A list of non-empty strings (or one string)."""
