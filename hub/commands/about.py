"""What the Animas know about the person asking: `/whoami`'s last lines, and `/forget-me`
(hub/people/erasure.py), which asks to be confirmed, since nothing brings it back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from hub.messages import Command
from hub.people.erasure import Forgotten
from hub.people.identity import PersonView

Count = Callable[[PersonView], dict[str, int]]
"""How many memories each Anima keeps private to the person."""
Forget = Callable[[PersonView, str], Awaitable[Forgotten]]
"""Forget the person (the second argument: who asked, for the audit log)."""
FORGET_NAMES = frozenset({"forget-me", "forget_me"})  # Telegram's commands take no dash


class AboutCommands:
    def __init__(self, count: Count, forget: Forget) -> None:
        self._count = count
        self._forget = forget

    def lines(self, person: PersonView) -> list[str]:
        counts = self._count(person)
        kept = ", ".join(f"{anima} {n}" for anima, n in counts.items()) or "none"
        return [
            f"memories kept private to you: {kept}",
            "(/forget-me deletes them, and what the Animas learned about you)",
        ]

    async def forget(self, command: Command, person: PersonView) -> str:
        if [a.lower() for a in command.args] != ["confirm"]:
            total = sum(self._count(person).values())
            return (
                f"This deletes the {total} memories the Animas keep private to you, what you "
                "shared with the team, the facts they learned about you and your DM "
                "conversations, on every platform you are linked on, for good. Send "
                "/forget-me confirm to go ahead."
            )
        gone = await self._forget(person, f"person:{person.id}")
        return f"Forgotten: {gone.line()}. Who you are (your name and accounts) is kept."
