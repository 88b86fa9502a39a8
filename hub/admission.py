"""Who may reach an Anima in a DM, per platform (`[people] dm_policy`, docs/people.md).

`open`: anyone who can write to the bot there (Slack and Discord: a workspace's members, the
default). `allowlist`: only `[people] allowlist` and people known otherwise. `pairing` (the
default on Telegram and LINE, where anyone can find a bot): a stranger is told once of a code
that an admin approves (`animahub pairing approve CODE`, `/anima approve CODE`); until then
nothing they send reaches an Anima. Known otherwise: an admin or the owner, someone an admin
let in (role `member`), or someone with an account on an open platform (linked with
`/link`, which works from anyone: the code proves who they are). Groups and channels are not
gated here: who is in them is the platform's business.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hub.access import Access, label_address, where_label
from hub.identity import IdentityService, PersonView
from hub.linking import Linking, new_code, normal_code
from hub.messages import Address, AddressKind, Inbound
from hub.settings import DmPolicy, PeopleSection
from hub.store.db import Database
from hub.store.models import AuditEntry, CredentialKind

log = logging.getLogger(__name__)
MEMBER = "member"
Notify = Callable[[Address, str], None]


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
        if address.kind is not AddressKind.DM:
            return True
        policy = self._settings.policy(address.platform)
        if policy is DmPolicy.OPEN or self.known(person, inbound.sender.key):
            return True
        if policy is DmPolicy.PAIRING and self._access.pairing_of(person.id) is None:
            code = new_code()
            self._access.create_pairing(person.id, code, where_label(address))
            log.info("%s (%s) asked to be let in", person.id, inbound.sender.key)
            self._notify(
                address,
                "Hello! I do not know you yet, so your messages reach no Anima for now. Ask "
                f"the hub's admin to let you in with the code {code}.",
            )
        return False

    def known(self, person: PersonView, key: str) -> bool:
        allowed = self._settings.allowlist
        if person.is_admin or MEMBER in person.roles or key in allowed:
            return True
        if f"person:{person.id}" in allowed:  # a person an admin created, by id
            return True
        return any(
            self._settings.policy(account.platform) is DmPolicy.OPEN
            for account in self._linking.accounts(person.id)
        )

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
