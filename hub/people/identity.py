"""Platform user -> Person, and the person's profile at <data>/shared/users/<person>.md."""

from __future__ import annotations

import getpass
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from hub.markdown_files import read_document, write_document
from hub.memory.mentions import Mentions, Named
from hub.memory.profiles import heading
from hub.messages import PlatformUser, utcnow
from hub.people.names import (
    PERSON,
    Squatted,
    config_problem,
    everyone,
    name_key,
    new_person_id,
    pick,
    squatted,
)
from hub.store.db import Database
from hub.store.models import Identity, Person, PersonAlias
from hub.store.versions import PEOPLE, Stale, Versions

if TYPE_CHECKING:
    from hub.settings import Settings

PROFILE_BODY = "{heading}\n\n## What Animas have learned\n\n"
OWNER = "owner"
WEB = "web"


@dataclass(frozen=True, slots=True)
class PersonView:
    """What the rest of the hub needs to know about the sender."""

    id: str
    display_name: str
    roles: tuple[str, ...]
    timezone: str
    language: str
    default_anima: str | None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles or OWNER in self.roles


__all__ = ["OWNER", "WEB", "IdentityService", "PersonView", "name_key", "os_user", "slugify"]


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, no LOGNAME: a container's odd uid
        return "owner"


def slugify(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:40]


def _found(session: Session, user: PlatformUser) -> tuple[Person, Identity] | None:
    """The person a platform account belongs to, with that account's row."""
    found = session.exec(
        select(Person, Identity)
        .join(Identity)
        .where(Identity.platform == user.platform, Identity.user_id == user.user_id)
    ).first()
    return (found[0], found[1]) if found is not None else None


class IdentityService:
    def __init__(
        self,
        db: Database,
        users_dir: Path,
        admins: list[str],
        timezone: str,
        language: str,
        owner: str = "",
        versions: Versions | None = None,
    ) -> None:
        self._db = db
        self._owner_default = owner
        self._users_dir = users_dir
        self._admins = set(admins)
        self._timezone = timezone
        self._language = language
        # A cache keyed by platform identity saves two queries a message. Another writer of
        # the people tables (another hub worker) makes it stale: `_fresh` drops it then.
        self._stale = Stale(versions, PEOPLE)
        self._cache: dict[str, PersonView] = {}
        self._names: dict[str, str] = {}  # the display name each identity last came with
        self._owner: PersonView | None = None
        self._web: dict[str, PlatformUser] = {}  # person id -> their web identity
        self._aliases: dict[str, tuple[str, ...]] | None = None  # person -> merged ids
        self._mentions: Mentions | None = None  # everyone's names, for `names_in`

    @classmethod
    def of(
        cls, settings: Settings, db: Database, versions: Versions | None = None
    ) -> IdentityService:
        """The data root's people as its settings describe them (the hub's, or a CLI's
        working on the data root while no hub runs)."""
        hub = settings.hub
        users = settings.home / "shared" / "users"
        return cls(db, users, hub.admins, hub.timezone, hub.language, hub.owner, versions)

    def _fresh(self) -> None:
        """Drop the cache if another writer changed people (hub/store/versions.py)."""
        if self._stale.moved():
            self.forget()

    def forget(self) -> None:
        """Drop what is cached: people were merged or split (hub/people/linking.py)."""
        self._cache.clear()
        self._web.clear()
        self._owner = None
        self._aliases = None
        self._mentions = None

    def aliases_of(self, person_id: str) -> tuple[str, ...]:
        """The ids merged into this person: their memory is this person's."""
        self._fresh()
        if self._aliases is None:
            with self._db.session() as session:
                rows = session.exec(select(PersonAlias)).all()
            found: dict[str, list[str]] = {}
            for row in rows:
                found.setdefault(row.person_id, []).append(row.alias)
            self._aliases = {k: tuple(sorted(v)) for k, v in found.items()}
        return self._aliases.get(person_id, ())

    def names_in(self, text: str) -> Named:
        """Who `text` names (their ids, merged ones included: recall's people retriever),
        and `text` with their names as "I" / "my", as a query's embedding reads it
        (hub/memory/mentions.py)."""
        self._fresh()
        if self._mentions is None:
            people = self.everyone()
            self._mentions = Mentions((self.ids_of(p.id), p.display_name) for p in people)
        return self._mentions.find(text)

    def ids_of(self, person_id: str) -> tuple[str, ...]:
        """The person's id and those merged into it: every `person:<id>` scope theirs."""
        return (person_id, *self.aliases_of(person_id))

    @property
    def users_dir(self) -> Path:
        return self._users_dir

    def profile_path(self, person_id: str) -> Path:
        return self._users_dir / f"{person_id}.md"

    def resolve(self, user: PlatformUser) -> PersonView:
        self._fresh()
        cached = self._cache.get(user.key)
        if cached is not None and self._names.get(user.key) == user.display_name:
            return cached
        with self._db.session() as session:
            found = _found(session, user)
            if found is None:
                try:
                    row = self._create(session, user)
                except IntegrityError:
                    # Another writer of the database made this person between the look and
                    # the insert (several hub workers, docs/scale.md): theirs is the one.
                    session.rollback()
                    found = _found(session, user)
                    if found is None:
                        raise
            if found is not None:
                row, identity = found
                self._update(session, row, identity, user)
            view = _view(row)
        self._cache[user.key] = view
        self._names[user.key] = user.display_name
        return view

    def _update(
        self, session: Session, row: Person, identity: Identity, user: PlatformUser
    ) -> None:
        """Keep what the platform says now: a new admin entry, a changed display name."""
        changed = False
        if user.key in self._admins and "admin" not in row.roles:
            row.roles = [*row.roles, "admin"]
            changed = True
        if user.display_name and user.display_name != identity.display_name:
            # Renamed on this platform (compared per identity, so a person known by two
            # names on two platforms is not renamed back and forth).
            identity.display_name = row.display_name = user.display_name
            self._mentions = None
            session.add(identity)
            changed = True
        if changed:
            session.add(row)
            self._write_profile(row, [user.key])

    def display_name(self, person_id: str) -> str:
        """What a person is called, by id ("someone" for an id no one has)."""
        return self.by_id(person_id).display_name

    def by_id(self, person_id: str) -> PersonView:
        """The person a stored inbox row names (after a restart the cache is empty)."""
        for view in self._cache.values():
            if view.id == person_id:
                return view
        with self._db.session() as session:
            row = session.get(Person, person_id)
            if row is None:  # merged into another since (an inbox row kept the old id)
                alias = session.get(PersonAlias, person_id)
                row = session.get(Person, alias.person_id) if alias is not None else None
        if row is None:
            return PersonView(
                person_id or "unknown", "someone", (), self._timezone, self._language, None
            )
        return _view(row)

    # people by name, and the owner ---------------------------------------------------

    def find(self, name: str) -> PersonView | None:
        """The person `name` means: their id, or a name an admin gave them that nobody else
        goes by (hub/people/names.py); None for nobody. A name that is a platform's (anyone
        chooses their display name) or several people's raises `AmbiguousName`, with the
        candidates and their accounts."""
        with self._db.session() as session:
            found = pick(everyone(session), name)
        return self.by_id(found) if found is not None else None

    def everyone(self) -> list[PersonView]:
        with self._db.session() as session:
            rows = session.exec(
                select(Person).order_by(col(Person.created_at), col(Person.id))
            ).all()
        return [_view(row) for row in rows]

    def named(self, name: str, by: str = "admin") -> PersonView:
        """The person `name` means (`find`), or someone new by that name (`create`). Two
        hub workers naming someone new at once make one person: on PostgreSQL the look and
        the making hold a lock on the name (one process on SQLite does both unbroken)."""
        with self._db.exclusively(f"person-name:{name_key(name)}"):
            return self.find(name) or self.create(name, by)

    def create(self, name: str, by: str) -> PersonView:
        """A new person called `name`, with a web identity, named so by `by` (an admin, or
        "config" for the owner): never someone already there, whatever they are called."""
        name = name.strip()
        if not name:
            raise ValueError("a person needs a name")
        with self._db.session() as session:
            person = Person(
                id=self._new_id(session),
                display_name=name,
                timezone=self._timezone,
                language=self._language,
                roles=[],
                named_by=by,
            )
            session.add(person)
            session.flush()
            self._mentions = None
            session.add(
                Identity(platform=WEB, user_id=person.id, person_id=person.id, display_name=name)
            )
            self._write_profile(person, [f"{WEB}:{person.id}"])
            return _view(person)

    def web_user(self, person: PersonView) -> PlatformUser:
        """How `person` speaks on the web chat: their web identity, linked on first use (the
        caller was authenticated as this person, so the link is not a claim)."""
        self._fresh()
        cached = self._web.get(person.id)
        if cached is not None:
            return cached
        with self._db.session() as session:
            identity = session.exec(
                select(Identity)
                .where(Identity.platform == WEB, Identity.person_id == person.id)
                .order_by(col(Identity.created_at))
            ).first()
            if identity is None:
                user_id, n = person.id, 1
                while session.get(Identity, (WEB, user_id)) is not None:  # a legacy web name
                    n += 1
                    user_id = f"{person.id}-{n}"
                identity = Identity(
                    platform=WEB,
                    user_id=user_id,
                    person_id=person.id,
                    display_name=person.display_name,
                )
                session.add(identity)
            user = PlatformUser(WEB, identity.user_id, identity.display_name or person.display_name)
        self._web[person.id] = user
        return user

    def owner(self) -> PersonView:
        """The hub's owner: the person with the owner role, or (none yet) `[hub] owner`, or
        the OS user, made owner now (once, when several workers start at once)."""
        self._fresh()
        if self._owner is None:
            with self._db.exclusively("owner"):
                with self._db.session() as session:
                    rows = session.exec(select(Person).order_by(col(Person.created_at))).all()
                owners = [row for row in rows if OWNER in row.roles]
                if owners:
                    self._owner = _view(owners[0])
                else:  # someone new, whoever else goes by that name (a stranger may)
                    made = self.create(self._owner_default or os_user(), "config")
                    self._owner = self.set_owner(made.id)
        return self._owner

    def set_owner(self, person_id: str) -> PersonView:
        """Makes the person with this id the owner; the previous owner keeps everything
        else, their own role in config included."""
        target = self.by_id(person_id)
        with self._db.session() as session:
            for row in session.exec(select(Person)).all():
                has = OWNER in row.roles
                if has == (row.id == target.id):
                    continue
                row.roles = [*row.roles, OWNER] if not has else [r for r in row.roles if r != OWNER]
                session.add(row)
                self._write_profile(row, [])
                if row.id == target.id:
                    self._owner = _view(row)
        self._cache.clear()  # cached views carry the old roles
        owner = self._owner
        if owner is None or owner.id != target.id:  # it was already the owner
            owner = self._owner = self.by_id(target.id)
        return owner

    def config_problem(self, allowlist: list[str]) -> str:
        """An entry of `[hub] admins` or `allowlist` that names someone by a name a stranger
        could have taken, in one line (hub/people/names.py); "" when there is none. Admins
        named as `person:<id>` get the role now."""
        with self._db.session() as session:
            problem = config_problem(everyone(session), self._admins, allowlist)
        if problem:
            return problem
        for entry in sorted(self._admins):
            platform, _, person_id = entry.partition(":")
            if platform == PERSON and "admin" not in self.by_id(person_id).roles:
                self.add_role(person_id, "admin")
        return ""

    def squatted(self, config: list[str], owner_name: str) -> list[Squatted]:
        """`animahub people audit` (hub/people/names.py)."""
        with self._db.session() as session:
            return squatted(session, everyone(session), config, owner_name)

    def add_role(self, person_id: str, role: str) -> PersonView:
        """Give the person a role (`member`: let in by an admin, docs/people.md)."""
        with self._db.session() as session:
            row = session.get(Person, person_id)
            if row is None:
                raise LookupError(f"no person {person_id!r}")
            if role not in row.roles:
                row.roles = [*row.roles, role]
                session.add(row)
                self._write_profile(row, [])
            view = _view(row)
        self._cache.clear()  # cached views carry the old roles
        return view

    def _create(self, session: Session, user: PlatformUser) -> Person:
        name = user.display_name or user.user_id
        person = Person(
            id=self._new_id(session),
            display_name=name,
            timezone=self._timezone,
            language=self._language,
            roles=["admin"] if user.key in self._admins else [],
        )
        session.add(person)
        session.flush()
        self._mentions = None
        session.add(
            Identity(
                platform=user.platform,
                user_id=user.user_id,
                person_id=person.id,
                display_name=user.display_name,
                is_bot=user.is_bot,
            )
        )
        session.flush()
        self._write_profile(person, [user.key])
        return person

    def _new_id(self, session: Session) -> str:
        """An opaque id: made from a name, a stranger's chosen display name would be the id
        config and invites name (`web:carol`)."""
        candidate = new_person_id()
        while session.get(Person, candidate) is not None or self.profile_path(candidate).exists():
            candidate = new_person_id()
        return candidate

    def _write_profile(self, person: Person, identities: list[str]) -> None:
        path = self.profile_path(person.id)
        if path.exists():  # never clobber what Animas learned
            meta, body = read_document(path)
        else:
            meta, body = {}, PROFILE_BODY.format(heading=heading(person.display_name))
        meta.update(
            id=person.id,
            display_names=sorted({*meta.get("display_names", []), person.display_name}),
            identities=sorted({*meta.get("identities", []), *identities}),
            timezone=person.timezone,
            language=person.language,
            roles=list(person.roles),
            created=meta.get("created", utcnow().isoformat(timespec="seconds")),
        )
        write_document(path, meta, body)


def _view(row: Person) -> PersonView:
    return PersonView(
        id=row.id,
        display_name=row.display_name,
        roles=tuple(row.roles),
        timezone=row.timezone,
        language=row.language,
        default_anima=row.default_anima,
    )
