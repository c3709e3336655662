"""``python -m overseer.col [run|rebuild]``: the Cognitive Object Layer service."""

from overseer.col.bootstrap import ColService
from overseer.events.runtime import run_service

run_service(ColService())
