"""Talking to Overseer's own agent: messages, sessions, answers to its questions, its memory.

A session is one conversation with the agent. Each message starts a turn (or waits for the
current one to finish); the agent thinks, may propose tool calls (judged by the firewall like any
agent's: an approval card appears when one needs a person), may ask a question, and replies. The
turn's steps and the reply are events on the live stream (``/v1/ws?session=…``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from overseer_events.answers import authorises
from overseer_events.catalogue import PathGrant
from overseer_gateway.application.commands import AnswerQuestion, answer_question, receive_message
from overseer_gateway.domain.access import Caller, Role
from overseer_gateway.domain.actions import session_id_problem
from overseer_gateway.domain.chat import Refused, answer_refusal, message_refusal
from overseer_gateway.entrypoints.answers import json_response, passed_on
from overseer_gateway.entrypoints.auth import require
from overseer_gateway.entrypoints.context import gateway_of
from overseer_gateway.entrypoints.docs import READ, READ_ONE, WRITE, problems
from overseer_gateway.entrypoints.problems import ProblemError
from overseer_gateway.entrypoints.schemas import (
    AnswerAccepted,
    AnswerRequest,
    MemoryHit,
    MessageAccepted,
    MessageRequest,
    SessionSummary,
    SessionView,
)

router = APIRouter(tags=["conversation"])

Identifier = Annotated[str, Path(min_length=1, max_length=128)]


def _refuse(refused: Refused | None) -> None:
    if refused is not None:
        raise ProblemError(refused.status, refused.detail)


def _session(session_id: str) -> None:
    problem = session_id_problem(session_id)
    if problem:
        raise ProblemError(422, problem)


@router.post(
    "/v1/sessions/{session_id}/messages",
    status_code=202,
    response_model=MessageAccepted,
    responses=problems(*WRITE, 413),
    summary="Say something to Overseer's own agent; its reply follows on the session (and the live stream)",
)
async def message(
    request: Request,
    body: MessageRequest,
    session_id: Identifier,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    _session(session_id)
    gateway = gateway_of(request)
    paths = [attachment.path for attachment in body.attachments]
    _refuse(message_refusal(body.text, paths, gateway.message_limits, gateway.sandbox))
    event = await gateway.execute(lambda unit: receive_message(unit, session_id, body.text, caller, paths))
    ids = {"message_id": event.event_id, "turn_id": event.event_id, "event_id": event.event_id}
    return json_response({"session_id": session_id, **ids}, 202)


@router.get(
    "/v1/sessions/{session_id}/messages",
    response_model=list[dict[str, Any]],
    responses=problems(*READ_ONE),
    summary="The messages and replies of a session, in order",
)
async def conversation(
    request: Request, session_id: Identifier, _: Caller = Depends(require(Role.VIEWER))
) -> Response:
    return await passed_on(
        gateway_of(request).peers, "reasoning", "conversation.history", {"session_id": session_id}
    )


@router.get(
    "/v1/sessions",
    response_model=list[SessionSummary],
    responses=problems(*READ),
    summary="The agent's sessions, the most recently active first",
)
async def sessions(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    _: Caller = Depends(require(Role.VIEWER)),
) -> Response:
    return await passed_on(gateway_of(request).peers, "reasoning", "session.list", {"limit": limit})


@router.get(
    "/v1/sessions/{session_id}",
    response_model=SessionView,
    responses=problems(*READ_ONE),
    summary="One session: the dialogue, the turn's status, the open question or approval card, the trace",
)
async def session(
    request: Request, session_id: Identifier, _: Caller = Depends(require(Role.VIEWER))
) -> Response:
    return await passed_on(gateway_of(request).peers, "reasoning", "session.get", {"session_id": session_id})


@router.post(
    "/v1/sessions/{session_id}/hitl/{request_id}",
    status_code=202,
    response_model=AnswerAccepted,
    responses=problems(*WRITE, 404, 409, 413),
    summary="Answer the agent's open question (tool approvals use /v1/approvals)",
)
async def answer(
    request: Request,
    body: AnswerRequest,
    session_id: Identifier,
    request_id: Identifier,
    caller: Caller = Depends(require(Role.OPERATOR)),
) -> Response:
    _session(session_id)
    gateway = gateway_of(request)
    _refuse(answer_refusal(body.answer, gateway.message_limits))
    view = await gateway.peers.ask("reasoning", "session.get", {"session_id": session_id})
    question = view.get("hitl_request") if isinstance(view, dict) else None
    if not isinstance(question, dict) or question.get("request_id") != request_id:
        open_one = f" (the open one is {question['request_id']})" if isinstance(question, dict) else ""
        raise ProblemError(
            409, f"the agent has no open question {request_id} in session {session_id}{open_one}"
        )
    command = AnswerQuestion(session_id, request_id, body.answer, _grant(question, body.answer))
    event = await gateway.execute(lambda unit: answer_question(unit, command, caller))
    if event is None:
        raise ProblemError(409, f"the question {request_id} in session {session_id} was answered already")
    return json_response(
        {"session_id": session_id, "request_id": request_id, "event_id": event.event_id}, 202
    )


def _grant(question: dict[str, Any], answer: str) -> PathGrant | None:
    """The permission an answer gives: only a permission question's grant, only when the answer authorises it."""
    grant = question.get("grant")
    if question.get("type") != "permission" or not isinstance(grant, dict) or not authorises(answer):
        return None
    return PathGrant(tool=str(grant["tool"]), path=str(grant["path"]))


@router.get(
    "/v1/memory",
    response_model=list[MemoryHit],
    responses=problems(*READ),
    summary="Search the agent's memory: what was said, noted and done (Chinese included)",
)
async def memory(
    request: Request,
    q: Annotated[str, Query(max_length=500, description="words to look for; empty: the most recent")] = "",
    session: Annotated[str | None, Query(max_length=128, description="only this session's memories")] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    _: Caller = Depends(require(Role.VIEWER)),
) -> Response:
    payload: dict[str, Any] = {"q": q, "limit": limit, "session_id": session or None}
    return await passed_on(gateway_of(request).peers, "reasoning", "memory.search", payload)
