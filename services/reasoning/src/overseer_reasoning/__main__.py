"""``python -m overseer_reasoning [run|rebuild|provision|health]``: the reasoning service."""

from overseer_reasoning.bootstrap import ReasoningService
from overseer_runtime.main import run_service

run_service(ReasoningService())
