"""The call mix ``firewall_evaluate`` judges, and its peers with it: reads, writes, mail, shell, MCP,
escapes from the sandbox and a tool nobody declared, as an agent's day brings them."""

from __future__ import annotations

CALLS: list[tuple[str, dict[str, object]]] = [
    ("fs.read", {"path": "notes/today.md"}),
    ("fs.read", {"path": "reports/q3.txt"}),
    ("fs.list", {"path": "notes"}),
    ("fs.write", {"path": "out/summary.md", "content": "# Summary\n\nAll good.\n"}),
    ("fs.write", {"path": "drafts/../out/plan.txt", "content": "step 1\nstep 2\n", "mood": "hallucinated"}),
    ("time.get_current_time", {"timezone": "Europe/Berlin"}),
    ("time.convert_time", {"source_timezone": "UTC", "time": "09:30", "target_timezone": "Asia/Shanghai"}),
    ("email.send", {"to": "bob@example.com", "subject": "Meeting", "body": "Tomorrow at 10?"}),
    ("shell.run", {"command": "ls -la", "timeout_seconds": 10}),
    ("fs.read", {"path": "../../etc/passwd"}),
    ("fs.write", {"path": "/etc/cron.d/x", "content": "* * * * * root true"}),
    ("mcp.unknown", {"q": 1}),
]
