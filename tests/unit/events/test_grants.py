"""Session path grants: only reads are grantable; an fs.read grant covers listing; grant paths are absolute."""

from __future__ import annotations

import pytest

from overseer_events.grants import covers, grant_root, grantable


def test_only_the_read_tools_can_be_granted() -> None:
    assert grantable("fs.read")
    assert grantable("fs.list")
    for tool in ("fs.write", "shell.run", "email.send", "time.get_current_time", "fs.*", ""):
        assert not grantable(tool)


def test_a_read_grant_covers_listing_but_a_list_grant_does_not_cover_reading() -> None:
    assert covers("fs.read", "fs.read")
    assert covers("fs.read", "fs.list")
    assert covers("fs.list", "fs.list")
    assert not covers("fs.list", "fs.read")
    assert not covers("fs.read", "fs.write")
    assert not covers("fs.write", "fs.write")


@pytest.mark.parametrize(
    ("path", "root"),
    [
        ("/home/alice/report.txt", "/home/alice/report.txt"),
        ("/home/alice/docs/", "/home/alice/docs"),
        ("/home/alice/./docs/../notes", "/home/alice/notes"),
        ("//home//alice", "/home/alice"),
        ("../outside.txt", "/srv/outside.txt"),
        ("notes/a.txt", "/srv/sandbox/notes/a.txt"),
    ],
)
def test_a_grant_names_an_absolute_normalised_path_relative_ones_taken_from_the_sandbox(
    path: str, root: str
) -> None:
    assert grant_root(path, "/srv/sandbox") == root


@pytest.mark.parametrize("path", ["", "/", "/..", "//", "/tmp/\x00x", "../../../.."])
def test_the_whole_file_system_or_an_unusable_path_is_never_a_grant(path: str) -> None:
    assert grant_root(path, "/srv/sandbox") is None
