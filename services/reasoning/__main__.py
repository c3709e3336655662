from overseer.events.runtime import run_service
from overseer.reasoning.bootstrap import ReasoningService

run_service(ReasoningService())
