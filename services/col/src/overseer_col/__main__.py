"""``python -m overseer_col [run|rebuild]``: the Cognitive Object Layer service."""

from overseer_col.bootstrap import ColService
from overseer_runtime.runtime import run_service

run_service(ColService())
