from overseer_observer.bootstrap import ObserverService
from overseer_runtime.runtime import run_service

run_service(ObserverService())
