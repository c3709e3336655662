from overseer_reasoning.bootstrap import ReasoningService
from overseer_runtime.runtime import run_service

run_service(ReasoningService())
