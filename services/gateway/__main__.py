from overseer.events.runtime import run_service
from overseer.gateway.bootstrap import GatewayService

run_service(GatewayService())
