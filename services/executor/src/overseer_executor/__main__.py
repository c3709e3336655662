"""``python -m overseer_executor [run|rebuild|provision|health]``."""

from overseer_executor.bootstrap import ExecutorService
from overseer_runtime.main import run_service

run_service(ExecutorService())
