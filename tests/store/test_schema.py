"""The migrated schema: every model table, idempotent upgrades, no drift, faithful round trips."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlmodel import SQLModel, col, select

import hub.store.models  # noqa: F401  (registers every table on SQLModel.metadata)
from hub.messages import DeliveryKind
from hub.store.db import _HEAD, MIGRATIONS, Database, as_utc
from hub.store.models import AuditEntry, DeliveryRow, InboxItem, Person

VERSION_TABLE = "alembic_version"


def table_columns(engine: sa.Engine) -> dict[str, set[str]]:
    inspector = sa.inspect(engine)
    return {
        name: {column["name"] for column in inspector.get_columns(name)}
        for name in inspector.get_table_names()
        if name != VERSION_TABLE
    }


def model_columns() -> dict[str, set[str]]:
    return {
        name: {column.name for column in table.columns}
        for name, table in SQLModel.metadata.tables.items()
    }


def schema_diff(engine: sa.Engine) -> list[Any]:
    with engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn), SQLModel.metadata))


def test_migrate_creates_every_model_table_and_column(db: Database) -> None:
    expected = model_columns()
    assert {"person", "identity", "channel_binding", "inbox", "delivery", "turn", "audit"} <= set(
        expected
    )
    assert table_columns(db.engine) == expected


def test_migrated_schema_matches_the_models_exactly(db: Database) -> None:
    # A model change without a migration shows up here as an added/removed column, index,
    # constraint, or a changed type or nullability.
    assert schema_diff(db.engine) == []


def test_migrate_records_the_head_revision(db: Database) -> None:
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None
    with db.engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == head
        versions = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    assert [row[0] for row in versions] == [head]


def test_migrate_is_idempotent_and_keeps_data(database_url: str) -> None:
    first = Database(database_url)
    try:
        first.migrate()
        with first.session() as session:
            session.add(Person(id="p1", display_name="Ada"))
    finally:
        first.dispose()

    second = Database(database_url)  # a restart: a new engine on the same database
    try:
        second.migrate()
        second.migrate()
        assert table_columns(second.engine) == model_columns()
        assert schema_diff(second.engine) == []
        head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
        with second.engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_revision() == head
        with second.session() as session:
            person = session.get(Person, "p1")
            assert person is not None
            assert person.display_name == "Ada"
    finally:
        second.dispose()


RAW: dict[str, Any] = {
    "type": "message",
    "text": "héllo 日本語 😀",
    "nested": {"list": [1, 2.5, "three", None, True, False], "empty": {}, "none": None},
    "blocks": [{"type": "rich_text", "elements": [{"type": "text", "text": "x"}]}],
    "big": 2**40,
}


def test_json_columns_round_trip(db: Database) -> None:
    attachments: list[dict[str, Any]] = [
        {"name": "a.png", "url": "https://x/a.png", "content_type": "image/png", "size": 12},
        {"name": "b.txt", "url": "https://x/b.txt", "content_type": "", "size": None},
    ]
    with db.session() as session:
        session.add(Person(id="p1", display_name="Ada", roles=["admin", "operator"]))
        session.add(
            InboxItem(
                id="i1",
                platform="slack",
                event_id="e1",
                address="slack:T1/C1",
                conversation="slack:T1/C1",
                channel_key="slack:T1/C1",
                address_kind="channel",
                sender_key="slack:U1",
                text="hi",
                mentions=["aria", "kai"],
                attachments=attachments,
                raw=RAW,
            )
        )
        session.add(
            DeliveryRow(
                id="d1",
                idempotency_key="k1",
                address="slack:T1/C1",
                channel_key="slack:T1/C1",
                address_kind="channel",
                text="reply",
                kind=DeliveryKind.REPLY,
                anima="aria",
                chunks=["one", "twö", ""],
                message_ids=["m1", "m2"],
            )
        )
        session.add(AuditEntry(actor="web:root", action="test", detail=RAW))

    with db.session() as session:
        person = session.get(Person, "p1")
        inbox = session.get(InboxItem, "i1")
        delivery = session.get(DeliveryRow, "d1")
        audit = session.exec(select(AuditEntry)).one()
    assert person is not None and inbox is not None and delivery is not None
    assert person.roles == ["admin", "operator"]
    assert inbox.mentions == ["aria", "kai"]
    assert inbox.attachments == attachments
    assert inbox.raw == RAW
    assert delivery.chunks == ["one", "twö", ""]
    assert delivery.message_ids == ["m1", "m2"]
    assert audit.detail == RAW


def test_json_defaults_are_empty_containers(db: Database) -> None:
    with db.session() as session:
        session.add(Person(id="p1", display_name="Ada"))
        session.add(AuditEntry(actor="a", action="b"))
    with db.session() as session:
        person = session.get(Person, "p1")
        audit = session.exec(select(AuditEntry)).one()
    assert person is not None
    assert person.roles == []
    assert audit.detail == {}


MOMENTS = [
    pytest.param(datetime(2031, 3, 4, 5, 6, 7, 891011, tzinfo=UTC), id="utc"),
    pytest.param(
        datetime(2031, 3, 4, 5, 6, 7, 891011, tzinfo=timezone(timedelta(hours=9))), id="plus9"
    ),
    pytest.param(
        datetime(2031, 3, 4, 23, 30, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
        id="minus0530",
    ),
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_timezone_aware_datetimes_round_trip(db: Database, moment: datetime) -> None:
    """A stored moment reads back as the same instant (naive values are UTC by convention)."""
    with db.session() as session:
        session.add(Person(id="p1", display_name="Ada", created_at=moment))
        session.add(AuditEntry(actor="a", action="b", at=moment))
    with db.session() as session:
        person = session.get(Person, "p1")
        audit = session.exec(select(AuditEntry)).one()
    assert person is not None
    assert as_utc(person.created_at) == moment
    assert as_utc(audit.at) == moment


def test_nullable_datetime_round_trips_none_and_value(db: Database) -> None:
    sent = datetime(2031, 1, 1, 12, 0, 0, 1, tzinfo=UTC)
    with db.session() as session:
        for key, sent_at in (("none", None), ("set", sent)):
            session.add(
                DeliveryRow(
                    id=key,
                    idempotency_key=key,
                    address="slack:T1/C1",
                    channel_key="slack:T1/C1",
                    address_kind="channel",
                    text="t",
                    kind=DeliveryKind.REPLY,
                    anima="aria",
                    sent_at=sent_at,
                )
            )
    with db.session() as session:
        unset = session.get(DeliveryRow, "none")
        stored = session.get(DeliveryRow, "set")
    assert unset is not None and stored is not None
    assert unset.sent_at is None
    assert stored.sent_at is not None and as_utc(stored.sent_at) == sent


def test_datetime_order_follows_the_instant(db: Database) -> None:
    """Sorting by a datetime column sorts by instant, whatever offset each value was given."""
    earlier = datetime(2031, 3, 4, 10, 0, tzinfo=timezone(timedelta(hours=9)))  # 01:00 UTC
    later = datetime(2031, 3, 4, 2, 0, tzinfo=UTC)
    with db.session() as session:
        session.add(Person(id="later", display_name="L", created_at=later))
        session.add(Person(id="earlier", display_name="E", created_at=earlier))
    with db.session() as session:
        ids = session.exec(select(Person.id).order_by(col(Person.created_at))).all()
    assert list(ids) == ["earlier", "later"]


def test_the_hubs_own_reading_of_the_head_is_alembics() -> None:
    """A start skips alembic when the database is at `_HEAD`: it must be alembic's head."""
    assert ScriptDirectory(str(MIGRATIONS)).get_current_head() == _HEAD


def test_a_database_at_the_head_is_opened_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    Database(url).migrate()  # first: alembic makes the schema
    program = (
        "import sys; from hub.store.db import Database; "
        f"Database({url!r}).migrate(); print('alembic' in sys.modules)"
    )
    again = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert again.stdout.strip() == "False"
