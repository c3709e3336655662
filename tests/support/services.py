"""Several real services of one test stack, run in this process (each with its own NATS user and SQLite file)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from overseer_runtime.runtime import Runtime
from overseer_runtime.service import Service
from overseer_runtime.testing import Stack

# Deciders before producers, the gateway last (as `overseer up` starts them).
START_ORDER = ("observer", "col", "firewall", "executor", "reasoning", "gateway")


def service_class(name: str) -> type[Service] | None:
    """The Service subclass defined in ``overseer_<name>.bootstrap``, or None when it does not exist yet."""
    try:
        module = importlib.import_module(f"overseer_{name}.bootstrap")
    except ImportError:
        return None
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, Service)
            and value is not Service
            and value.name == name
        ):
            return value
    return None


def available(names: Iterable[str] = START_ORDER) -> list[str]:
    return [n for n in START_ORDER if n in set(names) and service_class(n) is not None]


@dataclass
class RunningServices:
    services: dict[str, Service] = field(default_factory=dict)
    runtimes: dict[str, Runtime] = field(default_factory=dict)
    replicas: dict[str, list[Runtime]] = field(default_factory=dict)  # partition k's runtime at [k]

    def __getitem__(self, name: str) -> Service:
        return self.services[name]


@asynccontextmanager
async def running(
    stack: Stack, names: Iterable[str] = START_ORDER, **overrides: Any
) -> AsyncIterator[RunningServices]:
    """Start ``names`` (those that exist) in start order on ``stack``; stop them in reverse order. A service
    the stack runs as several partitions (``stack.overrides["partitions"]``) starts once per partition:
    ``runtimes`` and ``services`` hold partition 0's, ``replicas`` each one."""
    wanted = set(names)
    counts = stack.settings().partition_counts()
    out = RunningServices()
    async with AsyncExitStack() as exits:
        for name in START_ORDER:
            cls = service_class(name) if name in wanted else None
            if cls is None:
                continue
            for index in range(counts.get(name, 1)):
                service = cls()
                index_overrides = (
                    {"partitions": {**counts, "index": index}} if counts.get(name, 1) > 1 else {}
                )
                runtime = await exits.enter_async_context(
                    stack.runtime(service, **overrides, **index_overrides)
                )
                out.replicas.setdefault(name, []).append(runtime)
                if index == 0:
                    out.runtimes[name], out.services[name] = runtime, service
        yield out
