"""``python -m overseer_firewall [run|rebuild|provision|health]``: the firewall service."""

from overseer_firewall.bootstrap import FirewallService
from overseer_runtime.main import run_service

run_service(FirewallService())
