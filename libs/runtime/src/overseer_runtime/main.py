"""A service as a process: ``python -m overseer_<name> [run|rebuild|provision|health]``.

``run`` serves until SIGTERM or SIGINT, then drains and stops; ``rebuild`` replays the service's
local store into its read models; ``provision`` creates the streams and the service's durable
consumers, as the provisioner (a deployment's one-shot job; ``overseer up`` does it itself);
``health`` asks the running service, with its own credential, whether it is ready (exit 0) or not
(exit 1): a container's healthcheck.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
from typing import Any

import orjson
from pythonjsonlogger.json import JsonFormatter

from overseer_runtime import tracing
from overseer_runtime.bus import connect
from overseer_runtime.config import LOCAL_NATS_URL, ConfigurationError, Settings, load_settings
from overseer_runtime.credentials import credentials_for
from overseer_runtime.home import private_umask
from overseer_runtime.permissions import PROVISIONER
from overseer_runtime.provisioning import provision_at
from overseer_runtime.rpc import RpcError, rpc_request
from overseer_runtime.runtime import Runtime
from overseer_runtime.service import Service
from overseer_runtime.store import EventStore

log = logging.getLogger("overseer.runtime")


class TraceIds(logging.Filter):
    """Puts the trace and span ids of the event or request being handled on each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = tracing.current_ids()
        record.trace_id, record.span_id = ids if ids is not None else (None, None)
        return True


def configure_logging(settings: Settings, service: str) -> None:
    """Records to stderr at ``[overseer] log_level``: lines of text, or JSON objects (``log_format =
    "json"`` or ``OVERSEER_LOG_FORMAT=json``) carrying ``service``, ``trace_id`` and ``span_id``."""
    handler = logging.StreamHandler(sys.stderr)
    if (os.environ.get("OVERSEER_LOG_FORMAT") or settings.overseer.log_format) == "json":
        handler.addFilter(TraceIds())
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s %(trace_id)s %(span_id)s",
                rename_fields={"levelname": "level", "name": "logger", "asctime": "time"},
                static_fields={"service": service},
            )
        )
    else:
        handler.setFormatter(logging.Formatter(f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=settings.overseer.log_level.upper(), handlers=[handler])


async def serve(service: Service, settings: Settings | None = None) -> None:
    """Run ``service`` until SIGTERM or SIGINT, then drain and stop."""
    runtime = Runtime(service, settings)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await runtime.start()
    freeze_start_up_heap()
    await stop.wait()
    log.info("%s stopping", service.name)
    await runtime.stop()


# Container objects allocated (net of those freed) before the youngest generation is collected. Python's
# default, 700, collects it several times per action under load: what a request holds for its few
# milliseconds (futures, messages, models) is scanned and promoted, and scanned again in the older
# generations. At this threshold most of it is freed by reference counting before a collection.
YOUNG_GENERATION_THRESHOLD = 10_000


def freeze_start_up_heap() -> None:
    """Keep the cyclic garbage collector off what start-up built: the modules, the models' validators,
    the configuration and the warm read models live as long as the process, yet every full collection
    walked them all (tens of milliseconds each under load, a pause of every request in flight). They
    are moved to the permanent generation, which no collection scans, and the youngest generation is
    collected less often (``YOUNG_GENERATION_THRESHOLD``)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, older, oldest)


def lower_priority(service: str, settings: Settings) -> None:
    """Run below the stack's CPU priority by ``[priorities] <service>`` (a niceness increment): when both
    want the CPU, the kernel gives it to the services on an action's path first, and this one takes what
    it reads in larger batches. Raising a priority again needs privileges: a service only lowers its own."""
    increment = settings.lowered_priority(service)
    if increment > 0:
        os.nice(increment)


def rebuild(service: Service, settings: Settings | None = None) -> dict[str, Any]:
    """Drop the service's read models and replay its local store into them; returns counts."""
    settings = settings or load_settings()
    store = EventStore(settings.db_path(service.name))
    try:
        return {"service": service.name, **store.rebuild(list(service.projections()))}
    finally:
        store.close()


async def provision_service(service: Service, settings: Settings | None = None) -> None:
    """Create the streams and ``service``'s durable consumers, as the credential in the environment.

    Run once per deployment by whoever holds the ``provisioner`` credential (``overseer up``
    does it itself); a service's own credential may not.
    """
    settings = settings or load_settings()
    await provision_at(
        settings.nats_url or LOCAL_NATS_URL,
        credentials_for(settings, PROVISIONER),
        settings.subjects,
        {service.name: service.subscriptions()},
        settings.nats,
        settings.partition_counts(),
    )


async def ready(service: Service, settings: Settings) -> bool:
    """Whether the running ``service`` answers that it is ready, asked with its own credential."""
    try:
        nc = await connect(
            settings.nats_url or LOCAL_NATS_URL,
            name=f"overseer-{service.name}-health",
            credential=credentials_for(settings, service.name),
            connect_timeout=2.0,
            reconnect=False,
        )
    except Exception as exc:  # no server, refused credential: not ready, and say why
        print(f"{service.name}: NATS: {exc!r}", file=sys.stderr)
        return False
    try:
        answer = await rpc_request(
            nc,
            service.name,
            "health",
            {"detailed": False},
            timeout=2.0,
            subjects=settings.subjects,
            partitions=settings.partition_counts(),
        )
        partition = settings.partition_of(service.name)
        own = answer if partition.alone else answer["partitions"][str(partition.index)]  # this replica's
        return bool(own.get("ready"))
    except RpcError as exc:
        print(f"{service.name}: {exc.detail}", file=sys.stderr)
        return False
    finally:
        await nc.close()


def run_service(service: Service) -> None:
    """Entry point of ``python -m overseer_<name> [run|rebuild|provision|health]``."""
    private_umask()
    try:
        settings = load_settings()
    except ConfigurationError as exc:  # said plainly, not as a traceback
        print(f"{service.name}: not starting: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    configure_logging(settings, service.name)
    command = sys.argv[1] if len(sys.argv) > 1 else "run"
    if command == "rebuild":
        print(orjson.dumps(rebuild(service, settings)).decode())
        return
    if command == "provision":
        asyncio.run(provision_service(service, settings))
        return
    if command == "health":
        raise SystemExit(0 if asyncio.run(ready(service, settings)) else 1)
    if command != "run":
        raise SystemExit(f"usage: python -m overseer_{service.name} [run|rebuild|provision|health]")
    lower_priority(service.name, settings)
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        asyncio.run(serve(service, settings))
    else:
        uvloop.run(serve(service, settings))
