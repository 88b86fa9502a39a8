"""One person across platforms: link codes, merging two people, unlinking (docs/people.md).

`/link` answers with a code (8 characters without 0/O/1/I, from `secrets`, valid 10
minutes, at most 3 pending a person, stored hashed in the database: `Access.create_link`).
`/link CODE` sent from another account joins the sender into the person the code stands
for: the code proves the two are one. A merge moves identities, credentials, aliases and
roles in one transaction, folds the profile in with nothing lost, and leaves an alias, so
what was kept under the old id (memory scoped `person:<old id>`) is the person's now
(`IdentityService.aliases_of`, hub/memory/service.py).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass

from sqlalchemy import update
from sqlmodel import Session, col, select

from hub.markdown_files import read_document, write_document
from hub.memory.profiles import LEARNED, heading
from hub.messages import PlatformUser, utcnow
from hub.people.credentials import LINK_TTL, Access
from hub.people.identity import IdentityService, PersonView
from hub.store.db import Database
from hub.store.models import (
    AuditEntry,
    Credential,
    CredentialKind,
    Handoff,
    Identity,
    Person,
    PersonAlias,
)

log = logging.getLogger(__name__)
ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no 0/O, no 1/I: read aloud, typed on a phone
CODE_LENGTH = 8
# The platforms a person's account can be on (adapters/notion posts reports, it has no people).
PLATFORMS = ("slack", "discord", "telegram", "line", "web")


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def normal_code(text: str) -> str:
    """A code as typed: any case, with spaces or dashes."""
    return "".join(text.split()).replace("-", "").upper()


class LinkRefused(Exception):
    """Said to the person as it is."""


@dataclass(frozen=True, slots=True)
class Linked:
    person: PersonView  # who the sender is now
    merged: str  # the id that was merged into it
    platforms: tuple[str, ...]  # the person's platforms now


@dataclass(frozen=True, slots=True)
class Account:
    platform: str
    user_id: str
    display_name: str

    @property
    def key(self) -> str:
        return f"{self.platform}:{self.user_id}"


class Linking:
    def __init__(self, db: Database, identity: IdentityService, access: Access) -> None:
        self._db = db
        self._identity = identity
        self._access = access

    def code_for(self, person: PersonView, where: str) -> str:
        """A new code for `person`, asked for at `where` (told there once it is used)."""
        code = new_code()
        self._access.create_link(person.id, code, label=where)
        return code

    @staticmethod
    def minutes_valid() -> int:
        return int(LINK_TTL.total_seconds() // 60)

    def redeem(self, code: str, sender: PersonView, actor: str) -> tuple[Linked, str]:
        """Join the sender into the person `code` stands for; also where the code was
        asked for. Raises `LinkRefused`."""
        found = self._access.use_code(CredentialKind.LINK, normal_code(code))
        if found is None:
            raise LinkRefused("That code is not valid: it may have expired or been used.")
        person_id, where = found
        if person_id == sender.id:
            raise LinkRefused("That code is yours: this account is already that person.")
        person = self.merge(sender.id, person_id, actor, via="/link")
        return Linked(person, sender.id, self.platforms(person.id)), where

    def merge(
        self, source_id: str, into_id: str, actor: str, via: str, account: str = ""
    ) -> PersonView:
        """Everything of `source_id` becomes `into_id`'s; `source_id` stays as an alias.
        Audited as `person.merged`: who went, by what (`via`), for which `account`."""
        if source_id == into_id:
            raise LinkRefused("Those are the same person.")
        with self._db.session() as session:
            source = session.get(Person, source_id)
            into = session.get(Person, into_id)
            if source is None or into is None:
                raise LinkRefused(f"No person {source_id if source is None else into_id}.")
            self._fold_profile(source, into, session)
            for table in (Identity, Credential, Handoff):
                session.exec(
                    update(table).where(col(table.person_id) == source_id).values(person_id=into_id)
                )
            session.exec(
                update(PersonAlias)
                .where(col(PersonAlias.person_id) == source_id)
                .values(person_id=into_id)
            )
            session.add(PersonAlias(alias=source_id, person_id=into_id))
            into.roles = sorted({*into.roles, *source.roles})
            into.default_anima = into.default_anima or source.default_anima
            session.add(into)
            session.flush()
            session.delete(source)
            detail = {"from": source_id, "name": source.display_name, "via": via}
            if account:
                detail["account"] = account
            session.add(_audit(actor, "person.merged", into_id, detail))
        self._identity.forget()
        self._identity.profile_path(source_id).unlink(missing_ok=True)
        log.info("%s merged into %s (%s)", source_id, into_id, via)
        return self._identity.by_id(into_id)

    def unlink(
        self, person_id: str, platform: str, actor: str, whose: str = "", user_id: str = ""
    ) -> PersonView:
        """The person's account on `platform` (the one with `user_id`, when given) becomes a
        person of its own (what was said before stays with the person). Raises
        `LinkRefused`, said to the person themselves or, given `whose` (an admin's unlink),
        naming them; several accounts on `platform` and no `user_id` is refused too."""
        accounts = self.accounts(person_id)
        leaving = [a for a in accounts if a.platform == platform and user_id in ("", a.user_id)]
        what = f"{platform}:{user_id}" if user_id else f"{platform} account"
        if not leaving:
            raise LinkRefused(f"No {what} is linked to {whose or 'you'}.")
        owner = f"{whose}'s" if whose else "Your"
        if len(leaving) > 1:  # after a merge: which one is for the admin to say
            keys = ", ".join(a.key for a in leaving)
            raise LinkRefused(
                f"{whose or 'You'} {'has' if whose else 'have'} {len(leaving)} {platform} "
                f"accounts ({keys}): name the one to unlink, as {platform}:USER_ID."
            )
        if len(accounts) == 1:
            raise LinkRefused(f"{owner} {what} is all there is: nothing to unlink it from.")
        account = leaving[0]
        with self._db.session() as session:
            row = session.get(Identity, (account.platform, account.user_id))
            if row is not None:
                session.delete(row)
            detail = {"platform": platform, "account": account.key}
            session.add(_audit(actor, "person.unlinked", person_id, detail))
        self._identity.forget()
        return self._identity.resolve(
            PlatformUser(account.platform, account.user_id, account.display_name)
        )

    def attach(
        self, person_id: str, account: Account, actor: str, merge: bool = False
    ) -> PersonView:
        """An admin's link: the account is this person's from now on. Its former person is
        merged in if it has nothing but this account (a stub made on first contact), or
        when `merge` says so; otherwise `LinkRefused`, naming them: a link must not take
        someone's other accounts, tokens and memory along by surprise."""
        with self._db.session() as session:
            row = session.get(Identity, (account.platform, account.user_id))
            former = row.person_id if row is not None else None
        if former == person_id:
            return self._identity.by_id(person_id)
        if former is not None:
            held = self.held(former, account)
            if held and not merge:
                raise LinkRefused(_belongs(self._identity.by_id(former), account, held, person_id))
            return self.merge(former, person_id, actor, via="admin link", account=account.key)
        with self._db.session() as session:
            session.add(
                Identity(
                    platform=account.platform,
                    user_id=account.user_id,
                    person_id=person_id,
                    display_name=account.display_name,
                )
            )
            session.add(_audit(actor, "person.linked", person_id, {"account": account.key}))
        self._identity.forget()
        return self._identity.by_id(person_id)

    def held(self, person_id: str, account: Account) -> list[str]:
        """What the person has besides `account`: other accounts, live tokens and sessions,
        ids merged in, roles but `member`. What they said in DMs is not counted: with this
        account their only one, it came through it, and goes with it."""
        others = [a.key for a in self.accounts(person_id) if a.key != account.key]
        tokens = len(self._access.listing(CredentialKind.API_TOKEN, person_id))
        sessions = len(self._access.listing(CredentialKind.SESSION, person_id))
        merged = self._identity.aliases_of(person_id)
        # `member`: let in by an admin (hub/people/admission.py), as a stub may be
        roles = [r for r in self._identity.by_id(person_id).roles if r != "member"]
        return [
            *others,
            *([_counted(tokens, "API token")] if tokens else []),
            *([_counted(sessions, "web session")] if sessions else []),
            *([f"ids merged in ({', '.join(merged)})"] if merged else []),
            *([f"role {', '.join(roles)}"] if roles else []),
        ]

    def accounts(self, person_id: str) -> list[Account]:
        with self._db.session() as session:
            rows = session.exec(
                select(Identity)
                .where(Identity.person_id == person_id)
                .order_by(col(Identity.platform), col(Identity.user_id))
            ).all()
        return [Account(r.platform, r.user_id, r.display_name) for r in rows]

    def platforms(self, person_id: str) -> tuple[str, ...]:
        return tuple(sorted({a.platform for a in self.accounts(person_id)}))

    def _fold_profile(self, source: Person, into: Person, session: Session) -> None:
        """The source's profile into the target's: names, identities, facts, any notes."""
        src_path = self._identity.profile_path(source.id)
        if not src_path.exists():
            return
        src_meta, src_body = read_document(src_path)
        path = self._identity.profile_path(into.id)
        meta, body = (
            read_document(path) if path.exists() else ({}, heading(into.display_name) + "\n")
        )
        for key in ("display_names", "identities"):
            meta[key] = sorted({*meta.get(key, []), *src_meta.get(key, [])})
        have = set(body.splitlines())
        facts = [
            line
            for line in src_body.split(LEARNED, 1)[-1].splitlines()
            if line.startswith("- ") and line not in have
        ]
        if facts:
            if LEARNED not in body:
                body = body.rstrip() + f"\n\n{LEARNED}\n"
            body = body.rstrip() + "\n" + "\n".join(facts) + "\n"
        notes = src_body.split(LEARNED, 1)[0].strip()
        title = heading(source.display_name)
        extra = "\n".join(ln for ln in notes.splitlines() if ln.strip() and ln != title)
        if extra and extra not in body:
            body = body.rstrip() + f"\n\n## Notes kept as {source.id}\n\n{extra}\n"
        write_document(path, meta, body)


def _counted(n: int, what: str) -> str:
    return f"{n} {what}" + ("s" if n != 1 else "")


def _belongs(former: PersonView, account: Account, held: list[str], into_id: str) -> str:
    """The one line that refuses an admin's link that would merge a whole person."""
    return (
        f"{account.key} belongs to {former.display_name} ({former.id}), who also has "
        f"{', '.join(held)}: linking it would merge all of {former.display_name} into "
        f"{into_id}. "
        f"To join two people on purpose: `animahub people merge {former.id} {into_id}` "
        "(or link with --merge)."
    )


def _audit(actor: str, action: str, target: str, detail: dict[str, str]) -> AuditEntry:
    return AuditEntry(
        at=utcnow(), actor=actor, where="hub", action=action, target=target, detail=detail
    )
