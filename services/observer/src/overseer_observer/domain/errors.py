"""What a query can be told that it cannot answer."""

from __future__ import annotations


class UnknownExecution(LookupError):
    def __init__(self, execution_id: str) -> None:
        super().__init__(f"no execution {execution_id!r} has been observed")
        self.execution_id = execution_id


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"no execution has been observed in session {session_id!r}")
        self.session_id = session_id
