"""Bearer-token authentication and role checks, as FastAPI dependencies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from overseer.gateway.domain.access import Caller, Role
from overseer.gateway.entrypoints.problems import ProblemError

bearer = HTTPBearer(auto_error=False, description="a token from OVERSEER_HOME/tokens.json")

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="overseer"'}


def authenticate(request: Request, credentials: HTTPAuthorizationCredentials | None) -> Caller:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ProblemError(
            401, "a bearer token is required: Authorization: Bearer <token>", headers=CHALLENGE
        )
    caller: Caller | None = request.app.state.gateway.tokens.identify(credentials.credentials)
    if caller is None:
        raise ProblemError(401, "this token is not known to the gateway", headers=CHALLENGE)
    return caller


def require(role: Role) -> Callable[..., Awaitable[Caller]]:
    """A dependency answering the :class:`Caller`, or 401 (no or unknown token) / 403 (role too low)."""

    # async on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, a hop per request.
    async def dependency(
        request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> Caller:
        caller = authenticate(request, credentials)
        if not caller.may(role):
            raise ProblemError(
                403, f"this endpoint needs the {role.value} role; the token is {caller.role.value}"
            )
        return caller

    dependency.__name__ = f"require_{role.value}"
    return dependency
