"""Commands about people: `/link`, `/link CODE` and `/unlink PLATFORM[:USER_ID]` (one person
across platforms, hub/people/linking.py), and the admin's `/anima approve CODE`
(hub/people/admission.py).

A link code is only ever handed out in a DM: whoever sends it from another account becomes
this person, with their private memory, so it must not be read by anyone else.
"""

from __future__ import annotations

from collections.abc import Callable

from hub.messages import Address, AddressKind, Command, Inbound
from hub.people.admission import Admission
from hub.people.credentials import label_address, where_label
from hub.people.identity import PersonView
from hub.people.linking import PLATFORMS, Linking, LinkRefused

Notify = Callable[[Address, str], None]
"""Sends a notice to an address through the outbox (the other side of a link)."""

LINK_USAGE = (
    "Usage: /link (in a DM: a code) | /link CODE (from your other account) | "
    "/unlink PLATFORM[:USER_ID]"
)


class PeopleCommands:
    def __init__(self, linking: Linking, admission: Admission, notify: Notify) -> None:
        self._linking = linking
        self._admission = admission
        self._notify = notify

    def answer(self, command: Command, person: PersonView, inbound: Inbound) -> str:
        actor = f"person:{person.id}"
        if command.name == "unlink":
            return self._unlink(command, person, actor)
        if len(command.args) > 1:
            return LINK_USAGE
        if not command.args:
            return self._code(person, inbound)
        try:
            linked, where = self._linking.redeem(command.args[0], person, actor)
        except LinkRefused as exc:
            return str(exc)
        on = ", ".join(linked.platforms)
        told = label_address(where)
        if told is not None:
            self._notify(
                told,
                f"Linked: your {inbound.address.platform} account is now you too "
                f"({linked.person.display_name} on {on}).",
            )
        return (
            f"Linked: you are {linked.person.display_name} on {on}. What you tell the Animas "
            "in a DM on one of them is theirs on all of them, and nobody else's."
        )

    def _code(self, person: PersonView, inbound: Inbound) -> str:
        address = inbound.address
        if address.kind is not AddressKind.DM:
            return "Send /link to me in a direct message: whoever holds the code becomes you."
        code = self._linking.code_for(person, where_label(address))
        return (
            f"Your link code: {code} (valid {self._linking.minutes_valid()} minutes, once). "
            f"Send /link {code} to me from your other account (Slack, Discord, Telegram, LINE "
            "or the web chat), and the Animas will know both are you."
        )

    def approve(self, args: tuple[str, ...], person: PersonView) -> str:
        """`/anima approve CODE` (the caller is an admin: the handler checked)."""
        if len(args) != 1:
            return "Usage: /anima approve CODE (the code the person was given)."
        let_in = self._admission.approve(args[0], f"person:{person.id}")
        if let_in is None:
            return "No one is waiting with that code."
        return f"Let in: {let_in.display_name} ({let_in.id}) may now write to the Animas."

    def _unlink(self, command: Command, person: PersonView, actor: str) -> str:
        """`/unlink PLATFORM`, or `/unlink PLATFORM:USER_ID` for one of several there."""
        platform, sep, user_id = command.args[0].partition(":") if command.args else ("", "", "")
        platform = platform.lower()
        if len(command.args) != 1 or platform not in PLATFORMS or (sep and not user_id):
            return f"Usage: /unlink PLATFORM[:USER_ID], PLATFORM one of {', '.join(PLATFORMS)}."
        try:
            split = self._linking.unlink(person.id, platform, actor, user_id=user_id)
        except LinkRefused as exc:
            return str(exc)
        return (
            f"Unlinked: your {platform} account is someone of its own now ({split.id}); "
            "what you said before stays with you here."
        )
