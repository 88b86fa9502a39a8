"""A command cron: an Anima runs a hub command on its own schedule (hub/schedule/agenda.py),
with admin rights (its crons/*.md are written by whoever administers the hub's disk)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from hub.commands.handler import CommandService
from hub.messages import Address, Command, Inbound, PlatformUser
from hub.people.identity import PersonView


class CronCommands:
    def __init__(self, commands: CommandService, now: Callable[[], datetime]) -> None:
        self._commands = commands
        self._now = now

    async def run(self, anima: str, command: Command, where: Address | None) -> str:
        """What the command answered; `where`: the conversation the cron posts to, if any."""
        address = where or Address("hub", "local", f"cron-{anima}")
        at = self._now()
        inbound = Inbound(
            event_id=f"cron:{anima}:{at.isoformat()}",
            address=address,
            sender=PlatformUser("hub", anima, f"{anima} (cron)"),
            text=f"/{command.name} {' '.join(command.args)}".strip(),
            command=command,
            sent_at=at,
        )
        person = PersonView(f"hub:{anima}", f"{anima} (cron)", ("admin",), "", "", None)
        return await self._commands.handle(inbound, person)
