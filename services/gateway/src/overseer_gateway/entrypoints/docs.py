"""OpenAPI helpers: the problem responses each route may answer with."""

from __future__ import annotations

from typing import Any

from overseer_gateway.entrypoints.problems import PROBLEM
from overseer_gateway.entrypoints.schemas import Problem

DESCRIPTIONS = {
    400: "Malformed JSON",
    401: "No bearer token, or an unknown one",
    403: "The token's role may not do this",
    404: "Unknown resource",
    409: "Conflict with the current state",
    413: "The body is too large",
    422: "The request is not valid",
    503: "A service the answer depends on is not reachable",
    504: "A service the answer depends on did not answer in time",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        status: {"model": Problem, "description": DESCRIPTIONS.get(status, "Error")} for status in statuses
    }


def problem_media_types(document: dict[str, Any]) -> dict[str, Any]:
    """Every 4xx/5xx of the document is ``application/problem+json`` with the Problem schema.

    FastAPI files additional responses under the route's media type and adds its own 422
    (HTTPValidationError); the gateway answers all of them as problem documents instead.
    """
    ref = {"$ref": "#/components/schemas/Problem"}
    for route, path in document.get("paths", {}).items():
        if route == "/healthz":  # its 503 is the health document itself, not a problem
            continue
        for operation in path.values():
            for status, response in operation.get("responses", {}).items():
                if status.isdigit() and int(status) >= 400:
                    response["content"] = {PROBLEM: {"schema": ref}}
                    response["description"] = DESCRIPTIONS.get(
                        int(status), response.get("description", "Error")
                    )
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return document


READ = (401, 403, 503, 504)
READ_ONE = (401, 403, 404, 422, 503, 504)
WRITE = (400, 401, 403, 413, 422, 503, 504)
