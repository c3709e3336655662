"""Why the COL refuses a command: each refusal carries the HTTP-style status the gateway answers with."""

from __future__ import annotations


class CoRefused(Exception):
    """A command the COL will not apply; becomes ``co.command_rejected`` and an RPC/REST error."""

    status: int = 400

    def __init__(self, detail: str, legal_triggers: list[str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.legal_triggers = list(legal_triggers or [])


class CoNotFound(CoRefused):
    """An unknown CO or suggestion."""

    status = 404


class CoConflict(CoRefused):
    """Not now: an illegal trigger (with the legal ones), a taken co_id, an already decided suggestion."""

    status = 409


class CoInvalid(CoRefused):
    """Malformed input: a missing title, an unknown relation, a description over the limit."""

    status = 422
