"""``python -m overseer_gateway [run|rebuild|provision|health]``: the gateway service (REST and WebSocket)."""

from overseer_gateway.bootstrap import GatewayService
from overseer_runtime.main import run_service

run_service(GatewayService())
