"""The web console (static files shipped in the package, no build step, nothing fetched at run time) and
``GET /v1/me``, which tells the console who signed in so it can hide what that role may not do. The
console is a client like any other: every request it makes is checked by the routes it calls."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Depends
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.entrypoints.answers import json_response
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.docs import problems
from overseer_gateway.entrypoints.schemas import Me

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
"""index.html, console.css and the ES modules, shipped as package data of overseer-gateway."""

router = APIRouter()


@router.get("/", include_in_schema=False)
async def console() -> Response:
    # no-cache: a browser revalidates, so a new gateway's console is never mixed with an old one's modules
    return FileResponse(CONSOLE_DIR / "index.html", headers={"Cache-Control": "no-cache"})


@router.get(
    "/v1/me",
    response_model=Me,
    responses=problems(401),
    tags=["access"],
    summary="Who the token stands for: its role and principal name",
)
async def me(caller: Caller = Depends(require(Role.VIEWER))) -> Response:
    return json_response({"role": caller.role.value, "name": caller.name})


def assets() -> StaticFiles:
    """The console's CSS and modules, mounted at ``/console``."""
    return StaticFiles(directory=CONSOLE_DIR)
