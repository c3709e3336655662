"""``python -m overseer_col [run|rebuild|provision|health]``: the Cognitive Object Layer service."""

from overseer_col.bootstrap import ColService
from overseer_runtime.main import run_service

run_service(ColService())
