from overseer.events.runtime import run_service
from overseer.observer.bootstrap import ObserverService

run_service(ObserverService())
