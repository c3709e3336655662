from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.runtime import run_service

run_service(GatewayService())
