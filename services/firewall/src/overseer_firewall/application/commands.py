"""What the firewall does on request rather than on an event: an administrator's changes, the timer's rounds.

Each runs in its own unit of work through :class:`FirewallHandlers`, so it is recorded and audited
like everything else; a policy or mode change reaches the kernel once it is committed (it can
loosen the firewall, see :mod:`.state`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from overseer_events.catalogue import Principal
from overseer_firewall.application.handlers import FirewallHandlers
from overseer_firewall.application.ports import UnitRunner
from overseer_firewall.domain.modes import ModeSetting, parse_mode
from overseer_firewall.domain.policy import AdminPolicy


class FirewallCommands:
    def __init__(self, firewall: FirewallHandlers, run: UnitRunner, clock: Callable[[], float]) -> None:
        self.firewall = firewall
        self.run = run
        self.clock = clock

    async def replace_admin(self, admin: AdminPolicy, by: Principal) -> int:
        """Record ``admin`` as the next version of the admin layer; answers that version."""
        return await self.run(lambda unit: self.firewall.replace_admin(unit, admin, by))

    def mode_setting(self, mode: str, grant: Mapping[str, Any] | None) -> ModeSetting:
        """``mode`` and its grant validated, a grant's ``seconds`` counted from now; raises ``ValueError``."""
        return parse_mode(mode, grant, self.clock())

    async def set_mode(self, principal: str, setting: ModeSetting, by: Principal) -> None:
        await self.run(lambda unit: self.firewall.set_mode(unit, principal, setting, by))

    async def stop_session(
        self, session_id: str, action: str, by: Principal, reason: str | None
    ) -> dict[str, Any]:
        """Pause, resume or cancel ``session_id`` (raises ``SessionRefused`` when its state does not allow it)."""
        return await self.run(lambda unit: self.firewall.stop_session(unit, session_id, action, by, reason))

    async def accept_tool_change(self, tool: str, by: Principal) -> dict[str, Any]:
        """Accept how ``tool`` changed (raises ``ChangeRefused`` when no change waits)."""
        return await self.run(lambda unit: self.firewall.accept_tool_change(unit, tool, by))

    async def check_timeouts(self) -> int:
        """One round of the decider of last resort: escalate, or decide, requests nobody answered."""
        return await self.run(self.firewall.check_timeouts)
