"""Bearer-token authentication and role checks: as FastAPI dependencies, and as plain functions for the
fast path (``fast_actions.py``), which must answer exactly as the dependencies do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from overseer_gateway.application.ports import Callers
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.context import gateway_of
from overseer_gateway.entrypoints.problems import ProblemError

bearer = HTTPBearer(auto_error=False, description="a token from OVERSEER_HOME/tokens.json")

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="overseer"'}


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, read as FastAPI's ``HTTPBearer`` reads it."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    if not scheme or not token or scheme.lower() != "bearer":
        return None
    return token


def check(tokens: Callers, token: str | None, role: Role) -> Caller:
    """The :class:`Caller` the token stands for, or :class:`ProblemError` 401 (no or unknown token) /
    403 (a role that may not). Tokens are compared in constant time (:class:`Callers`)."""
    if token is None:
        raise ProblemError(
            401, "a bearer token is required: Authorization: Bearer <token>", headers=CHALLENGE
        )
    caller = tokens.identify(token)
    if caller is None:
        raise ProblemError(401, "this token is not known to the gateway", headers=CHALLENGE)
    if not caller.may(role):
        raise ProblemError(
            403, f"this endpoint needs the {role.value} role; the token is {caller.role.value}"
        )
    return caller


def require(role: Role) -> Callable[..., Awaitable[Caller]]:
    """A dependency answering the :class:`Caller`, or 401 (no or unknown token) / 403 (role too low)."""

    # async on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a hop per request.
    async def dependency(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> Caller:
        token = credentials.credentials if credentials is not None else None
        return check(gateway_of(request).tokens, token, role)

    dependency.__name__ = f"require_{role.value}"
    return dependency
