"""A lean HTTP/1.1 keep-alive client for the load generator.

The pipeline benchmark measures Overseer, not its client: httpx spent about
3 ms of CPU per action on this 2-core machine, a quarter of all the CPU an
action costs, competing with the services it drives. This client does only
what the benchmark needs (JSON requests, Content-Length or chunked JSON
answers, a pool of persistent connections), like wrk or hey would.

A connection left idle for ``IDLE_SECONDS`` is closed rather than reused: the gateway's server closes
keep-alive connections idle for 5 seconds (uvicorn's default), and a request must never be sent on a
connection the server may be closing (a POST is not sent twice).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

import orjson

IDLE_SECONDS = 3.0


class LeanResponse:
    def __init__(self, status_code: int, body: bytes) -> None:
        self.status_code = status_code
        self.content = body

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return orjson.loads(self.content)


class LeanClient:
    def __init__(self, base_url: str, token: str, pool: int) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.authority = f"{self.host}:{self.port}".encode()
        self.auth = f"Bearer {token}".encode()
        # Idle connections, each with when it was last used (time.monotonic()).
        self._idle: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = asyncio.Queue()
        self._open: list[asyncio.StreamWriter] = []
        self._pool = pool

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while not self._idle.empty():
            reader, writer, since = self._idle.get_nowait()
            if time.monotonic() - since < IDLE_SECONDS and not reader.at_eof():
                return reader, writer
            writer.close()  # idle too long: the server may be closing it
            self._open.remove(writer)
        if len(self._open) < self._pool:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            self._open.append(writer)
            return reader, writer
        reader, writer, _ = await self._idle.get()
        return reader, writer

    async def request(self, method: str, path: str, body: bytes | None = None) -> LeanResponse:
        reader, writer = await self._connection()
        try:
            head = [
                f"{method} {path} HTTP/1.1".encode(),
                b"Host: " + self.authority,
                b"Authorization: " + self.auth,
                b"Accept: application/json",
            ]
            if body is not None:
                head += [b"Content-Type: application/json", f"Content-Length: {len(body)}".encode()]
            writer.write(b"\r\n".join(head) + b"\r\n\r\n" + (body or b""))
            status_line = await reader.readline()
            status = int(status_line.split(b" ", 2)[1])
            length = None
            chunked = False
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.partition(b":")
                lowered = name.strip().lower()
                if lowered == b"content-length":
                    length = int(value.strip())
                elif lowered == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
            if chunked:
                payload = bytearray()
                while True:
                    size = int((await reader.readline()).strip(), 16)
                    if size == 0:
                        await reader.readline()
                        break
                    payload += await reader.readexactly(size)
                    await reader.readline()
                data = bytes(payload)
            else:
                data = await reader.readexactly(length or 0)
        except BaseException:
            writer.close()
            self._open.remove(writer)
            raise
        self._idle.put_nowait((reader, writer, time.monotonic()))
        return LeanResponse(status, data)

    async def post(self, path: str, json: Any, params: dict[str, Any] | None = None) -> LeanResponse:
        return await self.request(
            "POST", f"{path}?{urlencode(params)}" if params else path, orjson.dumps(json)
        )

    async def get(self, path: str, params: dict[str, Any] | None = None) -> LeanResponse:
        return await self.request("GET", f"{path}?{urlencode(params)}" if params else path)

    async def aclose(self) -> None:
        for writer in self._open:
            writer.close()
        self._open.clear()
