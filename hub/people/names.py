"""Which person a typed name or id means, and config that names people (docs/people.md).

A display name is what a platform says about an account, and anyone chooses their own: a
Telegram stranger may call themselves Carol. So a name never picks a person by itself:

- an id does. New person ids are opaque (`u-3f1c9a2b7e`), never made from a name; ids made
  before (`carol`) are kept, and one the hub made from a platform's display name counts as
  a name, since the stranger chose it;
- a name picks the one person an admin named so (an invite, `user`, the owner: `named_by`)
  only while nobody else goes by it; otherwise the caller gets the candidates, with their
  accounts (`AmbiguousName`), and names one by id or asks for someone new.

`[hub] admins` and `[people] allowlist` name accounts by the platform's user id
(`telegram:5551234`) or people an admin created (`person:<id>`); `config_problem` finds an
entry that names someone by a name a stranger could have taken, and the hub does not start.
`squatted` is `animahub people audit`: people whose id came from a platform's name and
collide with a name the admin used.
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from sqlmodel import Session, col, select

from hub.adapter import AmbiguousName, Candidate
from hub.store.models import AuditEntry, Identity, Person

NEW_ID = re.compile(r"^u-[0-9a-f]{10}$")
WEB = "web"
PERSON = "person"  # `person:<id>` in config: a person an admin created, by id
HOW_TO_NAME = (
    "name accounts by the platform's user id (telegram:5551234, slack:U024BE7LH; "
    "`animahub people show ID` lists them) or a person an admin created by id (person:ID)"
)
# Audit actions by which an admin picked a person by name before: an invite, the owner,
# speaking for them. `/web` (detail via) is the person's own and proves nothing.
_PICKED = ("person.invite", "person.owner", "person.on_behalf")


def new_person_id() -> str:
    """An id that says nothing about the person (40 random bits), so no name can match it."""
    return "u-" + secrets.token_hex(5)


def name_key(name: str) -> str:
    """How names compare: `Dana`, `DANA` and `dana` are one name (Unicode casefold, after
    NFKC so that full-width and composed forms match too)."""
    return unicodedata.normalize("NFKC", name).casefold().strip()


@dataclass(frozen=True, slots=True)
class Known:
    """One person as a name lookup sees them."""

    id: str
    display_name: str
    named_by: str
    accounts: tuple[tuple[str, str, str], ...]  # (platform, user_id, display name)

    @property
    def name_derived(self) -> bool:
        """An id the hub made from a platform's display name (before ids were opaque): a
        stranger's first message chose it, so it is a name, not an id."""
        return not self.named_by and not NEW_ID.match(self.id)

    @property
    def names(self) -> set[str]:
        found = {name_key(self.display_name), *(name_key(a[2]) for a in self.accounts)}
        if self.name_derived:
            found.add(name_key(self.id))
        return found - {""}

    def candidate(self) -> Candidate:
        return Candidate(self.id, self.display_name, tuple(f"{p}:{u}" for p, u, _ in self.accounts))


def everyone(session: Session) -> list[Known]:
    people = session.exec(select(Person).order_by(col(Person.created_at), col(Person.id))).all()
    accounts: dict[str, list[tuple[str, str, str]]] = {}
    for row in session.exec(select(Identity).order_by(col(Identity.created_at))).all():
        accounts.setdefault(row.person_id, []).append((row.platform, row.user_id, row.display_name))
    return [Known(p.id, p.display_name, p.named_by, tuple(accounts.get(p.id, ()))) for p in people]


def pick(known: list[Known], text: str) -> str | None:
    """The id of the person `text` means: their id, or a name an admin gave them that no
    one else goes by; None for nobody. Raises `AmbiguousName` with the candidates when the
    name is anyone else's too, or only a platform's (a display name never picks).
    `person:ID` is an id and nothing else, also one made from a name before (`carol`)."""
    prefix, sep, ref = text.partition(":")
    if sep and prefix == PERSON:
        return next((k.id for k in known if k.id == ref), None)
    exact = next((k for k in known if k.id == text), None)
    if exact is not None and not exact.name_derived:
        return exact.id
    key = name_key(text)
    if not key:
        return None
    matches = [k for k in known if key in k.names]
    if len(matches) == 1 and matches[0].named_by and name_key(matches[0].display_name) == key:
        return matches[0].id
    if matches:
        raise AmbiguousName(text, [k.candidate() for k in matches])
    return None


def config_problem(known: list[Known], admins: Iterable[str], allowlist: Iterable[str]) -> str:
    """The first entry of `[hub] admins` / `[people] allowlist` that names someone by a name
    rather than an account or an admin's person, in one line with how to write it; "" when
    there is none. (The form, `telegram:5551234`, is checked as settings load.)"""
    for where, entries in (("[hub] admins", admins), ("[people] allowlist", allowlist)):
        for entry in entries:
            problem = _entry_problem(known, entry)
            if problem:
                return f"{where}: {entry!r} {problem}; {HOW_TO_NAME}"
    return ""


def _entry_problem(known: list[Known], entry: str) -> str:
    platform, _, ref = entry.partition(":")
    if platform == PERSON:
        person = next((k for k in known if k.id == ref), None)
        if person is None:
            return "names no person"
        if not person.named_by:
            accounts = ", ".join(person.candidate().accounts) or "none"
            return (
                f"is {person.display_name}, whom the hub made from a platform account, not an "
                f"admin (their accounts: {accounts})"
            )
        return ""
    if platform != WEB:
        return ""
    holder = next((k for k in known if (WEB, ref) in {(p, u) for p, u, _ in k.accounts}), None)
    holder = holder or next((k for k in known if k.id == ref), None)
    if holder is not None and holder.name_derived and holder.id == ref:
        return (
            f"is a web account named after {holder.display_name}'s display name on a platform, "
            "which anyone can take (`animahub people audit`)"
        )
    return ""


@dataclass(frozen=True, slots=True)
class Squatted:
    """A person whose id came from a platform's display name and collides with a name the
    admin used: maybe a stranger took a teammate's name."""

    person: Candidate
    why: tuple[str, ...]
    split: tuple[str, ...]  # the platform accounts to unlink (`animahub people unlink`)


def squatted(
    session: Session, known: list[Known], config: Iterable[str], owner_name: str
) -> list[Squatted]:
    """`animahub people audit`: name-derived people that config entries, the owner's name,
    an admin's invite or act on behalf, or another person's name collide with."""
    refs = {entry.partition(":")[2] for entry in config if ":" in entry}
    picked: dict[str, list[str]] = {}
    for row in session.exec(select(AuditEntry).where(col(AuditEntry.action).in_(_PICKED))).all():
        if row.detail.get("via") != "/web":
            picked.setdefault(row.target, []).append(row.action)
    found = []
    for person in (k for k in known if k.name_derived):
        why = [f"named in config as {ref}" for ref in sorted(refs) if ref == person.id]
        if owner_name and name_key(owner_name) in person.names:
            why.append("goes by [hub] owner's name")
        why += [
            f"picked by an admin ({action})" for action in sorted(set(picked.get(person.id, [])))
        ]
        namesakes = [k.id for k in known if k.id != person.id and k.names & person.names]
        if namesakes:
            why.append(f"goes by the name of {', '.join(namesakes)}")
        if why:
            split = tuple(f"{p}:{u}" for p, u, _ in person.accounts if p != WEB)
            found.append(Squatted(person.candidate(), tuple(why), split))
    return found
