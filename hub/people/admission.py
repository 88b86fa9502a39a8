"""Who may reach an Anima in a DM, per platform (`[people] dm_policy`, docs/people.md).

`open`: anyone who can write to the bot there (Slack and Discord: a workspace's members, the
default). `allowlist`: only `[people] allowlist` and people known otherwise. `pairing` (the
default on Telegram and LINE, where anyone can find a bot): a stranger is told once of a code
that an admin approves (`animahub pairing approve CODE`, `/anima approve CODE`); until then
nothing they send reaches an Anima. Known otherwise: an admin or the owner, someone an admin
let in (role `member`), or someone with an account on an open platform (linked with
`/link`, which works from anyone: the code proves who they are). Groups and channels are not
gated here: who is in them is the platform's business.

Commands are gated too, wherever they are sent (a command is the person's own exchange with
the hub, answered to them alone): admission decides before any command runs, and a stranger
may run only `STRANGER_COMMANDS`, the ones that prove who they are or concern only their own
data; anything else is answered with the notice (`refuses_command`). An account the hub
made itself (the web chat's, which `/web` hands to whoever asks from a DM) proves nothing
about the person, so it admits nobody elsewhere: only an admin's approval (the role
`member`, which an admin's invite or token also gives), the allowlist, or an account on an
open platform whose accounts the platform makes does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Final

from hub.messages import Address, AddressKind, Command, Inbound
from hub.people.credentials import Access, label_address, where_label
from hub.people.identity import WEB, IdentityService, PersonView
from hub.people.linking import Linking, new_code, normal_code
from hub.settings import DmPolicy, PeopleSection
from hub.store.db import Database
from hub.store.models import AuditEntry, CredentialKind

log = logging.getLogger(__name__)
MEMBER = "member"
Notify = Callable[[Address, str], None]

# The one list of what a stranger (someone admission holds back) may run; docs/people.md
# refers to it. Each either proves who they are or concerns only their own data. `/link`
# counts only with a code: a bare `/link` makes a code for someone else to redeem, and
# whoever redeems it is merged into the stranger (roles and private memory included).
STRANGER_COMMANDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "link": "/link CODE: the code, made by a known account, proves who they are",
        "whoami": "what the hub knows of them (their accounts and roles), nothing else",
        "forget-me": "deletes what is kept about them, and only that",
        "forget_me": "/forget-me as Telegram spells it",
    }
)
# Platforms whose accounts the hub makes itself (the web chat's: for an admin's invitee,
# the owner, and whoever sends `/web`): such an account is no proof of being let in.
HUB_MADE_ACCOUNTS: Final = frozenset({WEB})


def stranger_may(command: Command) -> bool:
    """Whether a stranger may run `command` (see `STRANGER_COMMANDS`)."""
    if command.name not in STRANGER_COMMANDS:
        return False
    return command.name != "link" or bool(command.args)


@dataclass(frozen=True, slots=True)
class Request:
    id: str
    person_id: str
    where: str
    since: datetime


class Admission:
    def __init__(
        self,
        db: Database,
        settings: PeopleSection,
        access: Access,
        identity: IdentityService,
        linking: Linking,
        notify: Notify,
    ) -> None:
        self._db = db
        self._settings = settings
        self._access = access
        self._identity = identity
        self._linking = linking
        self._notify = notify

    def admits(self, inbound: Inbound, person: PersonView) -> bool:
        """Whether the message goes on to an Anima; a stranger held by `pairing` is told
        once how to be let in."""
        address = inbound.address
        if address.kind is not AddressKind.DM or self.lets_in(person, inbound.sender.key):
            return True
        notice = self._first_notice(person, inbound)
        if notice is not None:
            self._notify(address, notice)
        return False

    def refuses_command(self, inbound: Inbound, person: PersonView, command: Command) -> str | None:
        """None when `person` may run `command`; otherwise what they are told instead. Asked
        before any command runs, wherever it was sent: its answer is theirs alone, as a DM."""
        if stranger_may(command) or self.lets_in(person, inbound.sender.key):
            return None
        log.info("%s (%s) may not run /%s yet", person.id, inbound.sender.key, command.name)
        notice = self._first_notice(person, inbound)
        if notice is not None:
            return notice
        if self._settings.policy(inbound.sender.platform) is DmPolicy.PAIRING:
            return (
                "I do not know you yet, so I cannot do that for you. Ask the hub's admin to let "
                "you in with the code I gave you."
            )
        return "I do not know you yet, so I cannot do that for you. Ask the hub's admin."

    def lets_in(self, person: PersonView, key: str) -> bool:
        """Whether the sender of account `key` (`platform:user_id`) is past admission."""
        platform = key.partition(":")[0]
        return self._settings.policy(platform) is DmPolicy.OPEN or self.known(person, key)

    def known(self, person: PersonView, key: str) -> bool:
        allowed = self._settings.allowlist
        if person.is_admin or MEMBER in person.roles or key in allowed:
            return True
        if f"person:{person.id}" in allowed:  # a person an admin created, by id
            return True
        return any(
            self._settings.policy(account.platform) is DmPolicy.OPEN
            and account.platform not in HUB_MADE_ACCOUNTS
            for account in self._linking.accounts(person.id)
        )

    def _first_notice(self, person: PersonView, inbound: Inbound) -> str | None:
        """The pairing notice with a new code, the first time a stranger held by `pairing`
        writes; None afterwards, and under `allowlist` (nobody to ask a code of)."""
        if self._settings.policy(inbound.sender.platform) is not DmPolicy.PAIRING:
            return None
        if self._access.pairing_of(person.id) is not None:
            return None
        code = new_code()
        self._access.create_pairing(person.id, code, where_label(inbound.address))
        log.info("%s (%s) asked to be let in", person.id, inbound.sender.key)
        return (
            "Hello! I do not know you yet, so your messages reach no Anima for now. Ask "
            f"the hub's admin to let you in with the code {code}."
        )

    def let_in(self, person_id: str) -> PersonView:
        """An admin's act that lets the person in (an invite, a token made for them): the
        role `member`. The act itself is audited where it is done (`person.invite`,
        `token.create`), so the role it gives needs no entry of its own."""
        person = self._identity.by_id(person_id)
        if person.is_admin or MEMBER in person.roles:
            return person
        return self._identity.add_role(person_id, MEMBER)

    def approve(self, code_or_id: str, actor: str) -> PersonView | None:
        """Let in the person of a pairing code (or request id); None if there is none."""
        if code_or_id.startswith("p-"):
            person_id = self._use_request(code_or_id)
        else:
            found = self._access.use_code(CredentialKind.PAIRING, normal_code(code_or_id))
            person_id = found[0] if found else None
        if person_id is None:
            return None
        person = self._identity.add_role(person_id, MEMBER)
        with self._db.session() as session:
            session.add(
                AuditEntry(actor=actor, where="hub", action="person.approved", target=person_id)
            )
        log.info("%s let %s in", actor, person_id)
        return person

    def requests(self) -> list[Request]:
        """The strangers waiting to be let in."""
        return [
            Request(c.id, c.person_id, str(label_address(c.label) or ""), c.created_at)
            for c in self._access.listing(CredentialKind.PAIRING)
            if c.used_at is None
        ]

    def _use_request(self, request_id: str) -> str | None:
        found = next((r for r in self.requests() if r.id == request_id), None)
        if found is None:
            return None
        self._access.revoke(request_id, CredentialKind.PAIRING)
        return found.person_id
