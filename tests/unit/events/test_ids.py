"""UUIDv7 event ids: ordered in time, unique, and random where the format leaves room, also across a fork."""

from __future__ import annotations

import os

from overseer_events.ids import uuid7


def test_ids_are_time_ordered_unique_and_version_7() -> None:
    ids = [uuid7() for _ in range(5000)]  # more than one read of the random source's worth
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(i[14] == "7" for i in ids)


def test_the_random_part_of_ids_made_in_a_forked_child_is_not_its_parents() -> None:
    uuid7()  # the parent has random bytes in hand
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's report goes through the pipe
        os.write(write, ",".join(uuid7()[24:] for _ in range(8)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        childs = pipe.read().split(",")
    os.waitpid(child, 0)
    parents = [uuid7()[24:] for _ in range(8)]
    assert len(childs) == 8
    assert not set(childs) & set(parents)
