"""Several processes of one service sharing its work: partitions, and which one an event belongs to.

A service that may run as several processes (the executor, the firewall) splits its work into ``count``
**partitions**, one per process (a *replica*). Each replica has its own SQLite store and its own
durable consumers, and reads every event the service subscribes to; it applies only the events of
its own partition and acknowledges the others unapplied (what replicas tell each other, such as the
firewall's policy kept by partition 0, is every partition's). Which partition an event belongs to is
decided by the service (:meth:`~overseer_runtime.service.Service.partition_key`): a key such as the
session id, hashed (CRC-32, the same in every process) modulo ``count``; an event without a key
belongs to every partition.

Why this keeps each effect once and each partition in order: a durable consumer delivers its
subjects in stream order, a replica's store is the only one that holds its partition's aggregates,
and a replica that restarts continues from its own tracking row, like a single process. Nothing is
shared between replicas but the stream.

Names: partition 0 keeps the names of a service that runs alone (``executor.db``, the durables
``executor`` and ``executor_lingered``), so a stack that grows from one process to two keeps its
history; partition ``k`` > 0 has ``executor.p<k>.db`` and the durables ``executor_p<k>`` and
``executor_p<k>_lingered`` (and, while the service is split, ``…_told``), which start where
partition 0's stand when they are made (:func:`~overseer_runtime.provisioning.starting_point`). At
most :data:`MAX_PARTITIONS` per service: the NATS permissions name every durable a service may read.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

MAX_PARTITIONS = 8
PARTITIONED_SERVICES: tuple[str, ...] = ("executor", "firewall")
"""The services that may run as several replicas (the others run one process each)."""


def partition_of(key: str, count: int) -> int:
    """The partition ``key`` belongs to among ``count`` (the same in every process and every run)."""
    return zlib.crc32(key.encode()) % count if count > 1 else 0


def instance_name(service: str, index: int) -> str:
    """How one replica names its files and durables: ``executor`` for partition 0, ``executor.p1`` …"""
    return service if index == 0 else f"{service}.p{index}"


def index_env(index: int) -> dict[str, str]:
    """What a replica's environment says of its partition (``[partitions] index``)."""
    return {"OVERSEER_PARTITIONS__INDEX": str(index)}


def instances(service: str, counts: Mapping[str, int]) -> list[tuple[str, dict[str, str]]]:
    """Each process to start of ``service`` (one per partition): its name, and its partition's environment."""
    return [(instance_name(service, index), index_env(index)) for index in range(counts.get(service, 1))]


@dataclass(frozen=True, slots=True)
class Partition:
    """The partition one process of a service runs: ``index`` of ``count``."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_PARTITIONS:
            raise ValueError(f"a service runs 1 to {MAX_PARTITIONS} partitions, not {self.count}")
        if not 0 <= self.index < self.count:
            raise ValueError(
                f"partition {self.index} does not exist among {self.count} (0 to {self.count - 1})"
            )

    @property
    def alone(self) -> bool:
        return self.count == 1

    def owns(self, key: str | None) -> bool:
        """Whether an event with partition ``key`` is this partition's (a key of None: every partition's)."""
        return key is None or partition_of(key, self.count) == self.index
