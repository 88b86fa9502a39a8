"""Caches of people and paused Animas across hub workers (docs/scale.md, "Caches"): a
change made through one worker's database connection holds on another worker within the
versions' bound, at once after a hint; and every write to a watched table counts, so no
migration may lose a trigger unnoticed."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from hub.commands.state import AnimaStates
from hub.delivery.outbox import Outbox
from hub.messages import PlatformUser
from hub.people.identity import IdentityService
from hub.settings import OutboxSection
from hub.store.db import Database
from hub.store.models import PersonAlias
from hub.store.versions import ANIMA_STATE, PEOPLE, Versions
from hub.turns.inbox import Inbox


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def counters(db: Database) -> dict[str, int]:
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT kind, version FROM hub_version")).all()
    return {kind: int(version) for kind, version in rows}


def states(db: Database, versions: Versions | None) -> AnimaStates:
    inbox = Inbox(db)
    return AnimaStates(db, inbox, Outbox(db, {}, OutboxSection()), versions=versions)


def people(db: Database, home: Path, versions: Versions | None) -> IdentityService:
    return IdentityService(db, home / "users", [], "UTC", "en", "Olivia", versions)


def test_every_write_to_a_watched_table_moves_its_counter(db: Database, tmp_path: Path) -> None:
    before = counters(db)
    assert set(before) == {PEOPLE, ANIMA_STATE}
    identity = people(db, tmp_path, None)
    person = identity.resolve(PlatformUser("slack", "U1", "Kim"))  # person and identity
    moved = counters(db)
    assert moved[PEOPLE] > before[PEOPLE] and moved[ANIMA_STATE] == before[ANIMA_STATE]
    identity.add_role(person.id, "member")
    assert counters(db)[PEOPLE] > moved[PEOPLE]
    states(db, None).pause("aria", "test")
    assert counters(db)[ANIMA_STATE] > moved[ANIMA_STATE]


def test_a_pause_on_one_worker_holds_on_another_within_the_bound(
    db: Database, second: Database
) -> None:
    ticks = Ticks()
    here = states(db, Versions(db))
    there = states(second, Versions(second, max_age_s=1.0, monotonic=ticks))
    assert not there.is_paused("aria")  # read, and cached

    assert here.pause("aria", "admin")
    assert not there.is_paused("aria")  # within the bound, the cache may still answer
    ticks.now += 1.0
    assert there.is_paused("aria")

    versions = Versions(second, max_age_s=3600.0, monotonic=ticks)
    hinted = states(second, versions)
    assert hinted.is_paused("aria")
    here.resume("aria", "admin")
    assert hinted.is_paused("aria")  # an hour's bound: nothing read yet
    versions.hint()  # what a NOTIFY on hub_changes does
    assert not hinted.is_paused("aria")


def test_roles_and_merges_on_one_worker_reach_the_others_cache(
    db: Database, second: Database, tmp_path: Path
) -> None:
    ticks = Ticks()
    here = people(db, tmp_path, Versions(db))
    there = people(second, tmp_path, Versions(second, monotonic=ticks))
    kim = PlatformUser("slack", "U1", "Kim")
    person = there.resolve(kim)
    assert "member" not in there.resolve(kim).roles  # cached now

    assert there.aliases_of(person.id) == ()
    here.add_role(person.id, "member")
    with db.session() as session:  # what a merge writes (hub/people/linking.py)
        session.add(PersonAlias(alias="old-kim", person_id=person.id))
        session.commit()
    ticks.now += 1.0
    assert "member" in there.resolve(kim).roles
    assert there.aliases_of(person.id) == ("old-kim",)
