"""Tests for hub.people.identity on SQLite and PostgreSQL: people, identities and profile files."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import select

from hub.messages import PlatformUser
from hub.people.identity import IdentityService, PersonView
from hub.store.db import Database
from hub.store.models import Identity, Person

ALICE = PlatformUser("web", "alice", "Alice")
ROOT = PlatformUser("web", "root", "Root")
OPAQUE = re.compile(r"u-[0-9a-f]{10}")  # a person id: made from no name (hub/people/names.py)


@pytest.fixture
def users_dir(home: Path) -> Path:
    return home / "shared" / "users"


def service(db: Database, users_dir: Path, admins: list[str] | None = None) -> IdentityService:
    return IdentityService(db, users_dir, admins or [], "Europe/Berlin", "de")


def read_profile(path: Path) -> tuple[dict[str, Any], str]:
    """YAML front matter and body, parsed without the hub's own helpers."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), text
    front, _, body = text[4:].partition("\n---\n")
    meta = yaml.safe_load(front)
    assert isinstance(meta, dict)
    return meta, body


def people(db: Database) -> list[Person]:
    with db.session() as session:
        return list(session.exec(select(Person)).all())


# --- first contact -------------------------------------------------------------------------


def test_first_message_creates_person_identity_and_profile(db: Database, users_dir: Path) -> None:
    person = service(db, users_dir).resolve(ALICE)

    assert OPAQUE.fullmatch(person.id)
    assert person.display_name == "Alice"
    assert person.roles == ()
    assert not person.is_admin
    assert person.timezone == "Europe/Berlin"
    assert person.language == "de"
    assert person.default_anima is None

    with db.session() as session:
        row = session.get(Person, person.id)
        identity = session.get(Identity, ("web", "alice"))
    assert row is not None
    assert row.display_name == "Alice"
    assert row.named_by == ""  # made from a platform account: its name is the platform's
    assert identity is not None
    assert identity.person_id == person.id
    assert identity.display_name == "Alice"
    assert identity.is_bot is False


def test_first_message_writes_the_profile(db: Database, users_dir: Path) -> None:
    ids = service(db, users_dir)
    person = ids.resolve(ALICE)

    path = users_dir / f"{person.id}.md"
    assert ids.profile_path(person.id) == path
    meta, body = read_profile(path)
    assert meta["id"] == person.id
    assert meta["display_names"] == ["Alice"]
    assert meta["identities"] == ["web:alice"]
    assert meta["timezone"] == "Europe/Berlin"
    assert meta["language"] == "de"
    assert meta["roles"] == []
    created = datetime.fromisoformat(str(meta["created"]))
    assert created.tzinfo is not None
    assert "# Alice" in body
    assert "## What Animas have learned" in body


def test_user_without_display_name_is_named_by_user_id(db: Database, users_dir: Path) -> None:
    person = service(db, users_dir).resolve(PlatformUser("slack", "U0123ABCD"))

    assert OPAQUE.fullmatch(person.id)
    assert person.display_name == "U0123ABCD"
    assert read_profile(users_dir / f"{person.id}.md")[0]["identities"] == ["slack:U0123ABCD"]


# --- later messages ------------------------------------------------------------------------


def test_second_resolve_returns_same_person_without_rewriting_profile(
    db: Database, users_dir: Path
) -> None:
    ids = service(db, users_dir)
    first = ids.resolve(ALICE)
    path = users_dir / f"{first.id}.md"
    before = path.stat()
    content = path.read_text(encoding="utf-8")

    second = ids.resolve(ALICE)

    assert second == first
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert path.read_text(encoding="utf-8") == content
    assert len(people(db)) == 1


def test_fresh_service_on_same_database_returns_same_person(
    db: Database, users_dir: Path, database_url: str
) -> None:
    first = service(db, users_dir).resolve(ALICE)
    path = users_dir / f"{first.id}.md"
    before = path.stat()

    restarted = Database(database_url)
    try:
        again = service(restarted, users_dir).resolve(ALICE)
    finally:
        restarted.dispose()

    assert again == first
    assert path.stat().st_ino == before.st_ino
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    assert [p.id for p in people(db)] == [first.id]


def test_same_display_name_gets_distinct_ids(db: Database, users_dir: Path) -> None:
    ids = service(db, users_dir)

    first = ids.resolve(ALICE)
    second = ids.resolve(PlatformUser("slack", "U999", "Alice"))
    third = ids.resolve(PlatformUser("web", "alice-again", "Alice"))

    assert len({first.id, second.id, third.id}) == 3
    assert all(OPAQUE.fullmatch(p.id) for p in (first, second, third))
    assert read_profile(users_dir / f"{second.id}.md")[0]["identities"] == ["slack:U999"]
    assert read_profile(users_dir / f"{first.id}.md")[0]["identities"] == ["web:alice"]


def test_japanese_display_name_gets_a_stable_id(
    db: Database, users_dir: Path, database_url: str
) -> None:
    yamada = PlatformUser("web", "yamada", "山田太郎")

    person = service(db, users_dir).resolve(yamada)

    assert OPAQUE.fullmatch(person.id)
    assert person.display_name == "山田太郎"
    meta, body = read_profile(users_dir / f"{person.id}.md")
    assert meta["display_names"] == ["山田太郎"]
    assert "# 山田太郎" in body

    restarted = Database(database_url)
    try:
        assert service(restarted, users_dir).resolve(yamada).id == person.id
    finally:
        restarted.dispose()


def test_another_japanese_user_gets_another_id(db: Database, users_dir: Path) -> None:
    ids = service(db, users_dir)

    first = ids.resolve(PlatformUser("web", "yamada", "山田太郎"))
    second = ids.resolve(PlatformUser("web", "suzuki", "鈴木花子"))

    assert first.id != second.id
    assert OPAQUE.fullmatch(second.id)


# --- admins --------------------------------------------------------------------------------


def test_identity_listed_in_admins_is_admin(db: Database, users_dir: Path) -> None:
    ids = service(db, users_dir, admins=["web:root"])

    root = ids.resolve(ROOT)
    alice = ids.resolve(ALICE)

    assert root.is_admin
    assert root.roles == ("admin",)
    assert not alice.is_admin
    assert read_profile(users_dir / f"{root.id}.md")[0]["roles"] == ["admin"]
    assert read_profile(users_dir / f"{alice.id}.md")[0]["roles"] == []


def test_identity_added_to_admins_later_becomes_admin(
    db: Database, users_dir: Path, database_url: str
) -> None:
    alice = service(db, users_dir).resolve(ALICE)

    restarted = Database(database_url)
    try:
        promoted = service(restarted, users_dir, admins=["web:alice"]).resolve(ALICE)
        stored = service(restarted, users_dir).by_id(alice.id)
    finally:
        restarted.dispose()

    assert promoted.id == alice.id
    assert promoted.is_admin
    assert stored.is_admin
    assert read_profile(users_dir / f"{alice.id}.md")[0]["roles"] == ["admin"]


# --- the profile belongs to the Animas too -------------------------------------------------


def test_rewriting_a_profile_keeps_what_animas_wrote(db: Database, users_dir: Path) -> None:
    ids = service(db, users_dir)
    alice = ids.resolve(ALICE)
    path = users_dir / f"{alice.id}.md"
    learned = "- Prefers short answers.\n- Works on the billing service.\n"
    path.write_text(path.read_text(encoding="utf-8") + learned, encoding="utf-8")
    created = read_profile(path)[0]["created"]

    with db.session() as session:
        row = session.get(Person, alice.id)
    assert row is not None
    ids._write_profile(row, ["slack:U999"])  # the one place profiles are (re)written

    meta, body = read_profile(path)
    assert learned in body
    assert "## What Animas have learned" in body
    assert body.count("# Alice") == 1
    assert meta["identities"] == ["slack:U999", "web:alice"]
    assert meta["created"] == created


# --- by_id ---------------------------------------------------------------------------------


def test_by_id_after_restart_returns_the_stored_person(
    db: Database, users_dir: Path, database_url: str
) -> None:
    original = service(db, users_dir, admins=["web:root"]).resolve(ROOT)

    restarted = Database(database_url)
    try:
        found = service(restarted, users_dir).by_id(original.id)
    finally:
        restarted.dispose()

    assert found == original
    assert found.is_admin


def test_by_id_of_unknown_person_is_a_placeholder(db: Database, users_dir: Path) -> None:
    found = service(db, users_dir).by_id("ghost")

    assert found == PersonView("ghost", "someone", (), "Europe/Berlin", "de", None)
    assert people(db) == []
    assert not (users_dir / "ghost.md").exists()


def test_a_display_name_changed_on_the_platform_is_kept_on_the_person(
    db: Database, users_dir: Path
) -> None:
    ids = service(db, users_dir)
    first = ids.resolve(PlatformUser("slack", "U1", "Al"))
    renamed = ids.resolve(PlatformUser("slack", "U1", "Alice Liddell"))
    assert renamed.id == first.id and renamed.display_name == "Alice Liddell"
    meta, _ = read_profile(users_dir / f"{first.id}.md")
    assert meta["display_names"] == ["Al", "Alice Liddell"]
    again = service(db, users_dir).resolve(PlatformUser("slack", "U1", "Alice Liddell"))
    assert again.display_name == "Alice Liddell"  # stored, not only cached
    with db.session() as session:
        identity = session.get(Identity, ("slack", "U1"))
    assert identity is not None and identity.display_name == "Alice Liddell"


# --- who a text names (recall's people retriever) -------------------------------------------


def test_names_in_knows_new_people_and_new_names_at_once(db: Database, users_dir: Path) -> None:
    identity = service(db, users_dir)
    alice = identity.resolve(ALICE).id
    assert identity.names_in("what did alice say?").people == (alice,)
    assert identity.names_in("and Dana?").people == ()
    dana = identity.resolve(PlatformUser("slack", "U1", "Dana Scully")).id
    bo = identity.named("Bo Ek").id
    assert identity.names_in("and Dana?").people == (dana,)
    assert identity.names_in("ask bo ek").people == (bo,)
    identity.resolve(PlatformUser("web", "alice", "Alicia"))  # renamed on the platform
    assert identity.names_in("what did alice say?").people == ()
    assert identity.names_in("what did Alicia say?").people == (alice,)


def test_two_workers_meeting_a_new_person_at_once_make_one_person(
    database_url: str, users_dir: Path
) -> None:
    """Two hub workers on one database (docs/scale.md) see a stranger's first message at
    the same moment: the second's insert meets the first's row, and it takes that person
    instead of failing the message."""
    from sqlalchemy import event

    first, second = Database(database_url), Database(database_url)
    first.migrate()
    a, b = service(first, users_dir), service(second, users_dir)
    met: list[str] = []

    def the_other_worker_meanwhile(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not met and statement.lstrip().upper().startswith("SELECT") and "identity" in statement:
            met.append(b.resolve(ALICE).id)  # commits between a's look and a's insert

    event.listen(first.engine, "after_cursor_execute", the_other_worker_meanwhile)
    try:
        person = a.resolve(ALICE)
        assert met == [person.id]
        with first.session() as session:
            assert len(session.exec(select(Person)).all()) == 1
            assert len(session.exec(select(Identity)).all()) == 1
    finally:
        first.dispose()
        second.dispose()
