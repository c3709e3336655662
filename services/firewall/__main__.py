"""``python -m overseer.firewall [run|rebuild]``: the firewall service."""

from overseer.events.runtime import run_service
from overseer.firewall.bootstrap import FirewallService

run_service(FirewallService())
