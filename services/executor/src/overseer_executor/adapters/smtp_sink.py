"""The development SMTP sink: a real SMTP server on 127.0.0.1 that keeps every message as a file.

``overseer up`` starts it (``await SmtpSink.from_settings(settings).start()``)
so ``email.send`` talks real SMTP without sending anything anywhere; each
accepted message becomes ``OVERSEER_HOME/mail/<ns timestamp>-<id>.eml``
(envelope sender and recipients as ``X-Sink-*`` headers, then the raw message).

Standalone: ``python -m overseer_executor.adapters.smtp_sink --port 8025 [--host H] [--dir D]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

from overseer_executor.settings import ToolsSettings
from overseer_runtime.config import Settings, load_settings

log = logging.getLogger("overseer.executor.smtp_sink")

# The sink never listens beyond this machine unless told to.
LOOPBACK = "127.0.0.1"


class MailDrop:
    """aiosmtpd handler: writes each message atomically (temp file, then rename) into ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.store(envelope)
        return "250 Message accepted for delivery"

    def store(self, envelope: Envelope) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        raw = envelope.original_content or envelope.content or b""
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        head = (
            f"X-Sink-Mail-From: {envelope.mail_from}\r\n"
            f"X-Sink-Rcpt-To: {', '.join(envelope.rcpt_tos)}\r\n"
            f"X-Sink-Received-At: {time.time():.6f}\r\n"
        ).encode()
        name = f"{time.time_ns()}-{uuid.uuid4().hex[:12]}.eml"
        tmp = self.directory / f".{name}.tmp"
        tmp.write_bytes(head + raw)
        final = self.directory / name
        os.replace(tmp, final)
        log.info("stored mail from %s to %s as %s", envelope.mail_from, envelope.rcpt_tos, final.name)
        return final


class SmtpSink:
    """An SMTP server on the running event loop. ``port=0`` picks a free port (see ``.port`` after start)."""

    def __init__(
        self,
        mail_dir: Path,
        *,
        port: int,
        host: str = LOOPBACK,
        handler: MailDrop | None = None,
    ) -> None:
        self.mail_dir = Path(mail_dir)
        self.host = host
        self.port = port
        self.handler = handler or MailDrop(self.mail_dir)
        self._server: asyncio.AbstractServer | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> SmtpSink:
        """The sink ``email.send`` points at (``[tools.email]``), storing into ``OVERSEER_HOME/mail``."""
        host, port = settings.typed("tools", ToolsSettings).smtp_endpoint
        return cls(settings.home / "mail", host=host, port=port)

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.mail_dir.mkdir(parents=True, exist_ok=True)

        def protocol() -> SMTP:
            # hostname given: aiosmtpd would otherwise call socket.getfqdn(), which can block on DNS.
            return SMTP(self.handler, hostname="overseer-sink", enable_SMTPUTF8=True, loop=loop)

        self._server = await loop.create_server(protocol, self.host, self.port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        log.info("SMTP sink on %s:%s storing into %s", self.host, self.port, self.mail_dir)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    async def __aenter__(self) -> SmtpSink:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    def messages(self) -> list[Path]:
        """Stored messages, oldest first."""
        if not self.mail_dir.is_dir():
            return []
        return sorted(p for p in self.mail_dir.glob("*.eml"))


async def _serve(sink: SmtpSink) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await sink.start()
    print(f"SMTP sink listening on {sink.host}:{sink.port}, storing into {sink.mail_dir}", flush=True)
    await stop.wait()
    await sink.stop()


def main(argv: list[str] | None = None) -> None:
    settings = load_settings()
    default = SmtpSink.from_settings(settings)
    parser = argparse.ArgumentParser(description="Overseer's development SMTP sink")
    parser.add_argument("--host", default=default.host)
    parser.add_argument("--port", type=int, default=default.port)
    parser.add_argument("--dir", type=Path, default=default.mail_dir, help="where messages are stored")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s smtp_sink %(levelname)s %(message)s")
    asyncio.run(_serve(SmtpSink(args.dir, host=args.host, port=args.port)))


if __name__ == "__main__":
    main()
