"""Previews for held calls: a diff for fs.write, the rendered message for email.send, the command for shell.run."""

from __future__ import annotations

from overseer_firewall.domain.preview import ABSENT, CurrentFile, build_preview


def test_fs_write_preview_is_a_unified_diff_against_the_current_file() -> None:
    preview = build_preview(
        "fs.write", {"path": "plan.md", "content": "step 1\nstep 2b\n"}, CurrentFile(True, "step 1\nstep 2\n")
    )
    assert preview["kind"] == "diff"
    assert preview["exists"] is True
    assert "--- a/plan.md" in preview["diff"]
    assert "+++ b/plan.md" in preview["diff"]
    assert "-step 2\n" in preview["diff"]
    assert "+step 2b\n" in preview["diff"]


def test_fs_write_preview_of_a_new_file_diffs_against_nothing() -> None:
    preview = build_preview("fs.write", {"path": "new.md", "content": "hello"}, ABSENT)
    assert preview["exists"] is False
    assert "--- /dev/null" in preview["diff"]
    assert "+hello" in preview["diff"]
    assert "No newline at end of file" in preview["diff"]


def test_fs_write_preview_of_a_binary_file_says_so() -> None:
    preview = build_preview("fs.write", {"path": "x.bin", "content": "text"}, CurrentFile(True, None))
    assert preview["binary"] is True


def test_email_preview_is_the_rendered_message() -> None:
    preview = build_preview(
        "email.send",
        {"to": ["bob@example.com"], "cc": "ann@example.org", "subject": "会议", "body": "明天十点？"},
    )
    assert preview["rendered"] == "To: bob@example.com\nCc: ann@example.org\nSubject: 会议\n\n明天十点？"
    assert preview["domains"] == ["example.com", "example.org"]


def test_shell_preview_names_command_and_working_directory() -> None:
    preview = build_preview("shell.run", {"command": "ls -la", "timeout_seconds": 5}, cwd="/srv/sandbox")
    assert preview == {"kind": "shell", "command": "ls -la", "cwd": "/srv/sandbox", "timeout_seconds": 5}


def test_other_tools_show_their_arguments() -> None:
    assert build_preview("mcp.x", {"a": 1}) == {"kind": "call", "tool": "mcp.x", "args": {"a": 1}}
