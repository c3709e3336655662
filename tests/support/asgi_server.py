"""A small ASGI application on a free port of 127.0.0.1, served by uvicorn in this event loop: the other
end of an outgoing HTTP request (a webhook receiver) in tests and benchmarks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.types import ASGIApp


@asynccontextmanager
async def serving(app: ASGIApp) -> AsyncIterator[str]:
    """``app`` listening until the block ends; yields its base URL (``http://127.0.0.1:<port>``)."""
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # raises what stopped it
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
