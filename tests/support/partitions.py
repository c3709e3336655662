"""Session ids that land in chosen partitions of a service running as two replicas."""

from __future__ import annotations

from overseer_runtime.partitions import partition_of


def sessions_of_each_partition(per_partition: int, prefix: str = "s") -> list[str]:
    """Session ids, ``per_partition`` of them landing in each of two partitions, alternating 0, 1, 0, …"""
    found: dict[int, list[str]] = {0: [], 1: []}
    n = 0
    while min(len(ids) for ids in found.values()) < per_partition:
        session = f"{prefix}-{n}"
        n += 1
        bucket = found[partition_of(session, 2)]
        if len(bucket) < per_partition:
            bucket.append(session)
    return [session for pair in zip(found[0], found[1], strict=True) for session in pair]
