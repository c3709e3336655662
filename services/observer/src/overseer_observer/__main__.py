"""``python -m overseer_observer [run|rebuild|provision|health]``: the observer service."""

from overseer_observer.bootstrap import ObserverService
from overseer_runtime.main import run_service

run_service(ObserverService())
