"""``python -m overseer.executor [run|rebuild]``."""

from overseer.events.runtime import run_service
from overseer.executor.bootstrap import ExecutorService

run_service(ExecutorService())
