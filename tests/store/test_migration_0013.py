"""Migration 0013 (issue 41): the inbox is unique per sender, and people an admin invited
or made a token for before the upgrade become members, since their web account no longer
lets them in elsewhere (hub/people/admission.py). Upgraded from 0012 with data in it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from hub.store.db import MIGRATIONS, Database

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _upgrade(db: Database, revision: str) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def _person(conn: sa.Connection, person_id: str, roles: str) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO person (id, display_name, timezone, language, roles, created_at) "
            "VALUES (:id, :id, '', '', :roles, :at)"
        ),
        {"id": person_id, "roles": roles, "at": AT},
    )


def _credential(conn: sa.Connection, cid: str, kind: str, person: str, by: str) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO credential (id, kind, secret_hash, person_id, label, created_by, "
            "created_at) VALUES (:id, :kind, :hash, :person, '', :by, :at)"
        ),
        {"id": cid, "kind": kind, "hash": cid * 8, "person": person, "by": by, "at": AT},
    )


def _inbox(conn: sa.Connection, row_id: str, sender: str, event_id: str) -> None:
    conn.execute(
        sa.text(
            "INSERT INTO inbox (id, platform, event_id, address, conversation, channel_key, "
            "address_kind, sender_key, sender_name, sender_is_bot, text, mentions, "
            "addressed, attachments, raw, status, attempts, interrupted, received_at) VALUES "
            "(:id, 'web', :event, 'web:local/c', 'web:local/c', 'web:local/c', 'dm', :sender, "
            "'', false, 'hi', '[]', true, '[]', '{}', 'done', 0, 0, :at)"
        ),
        {"id": row_id, "event": event_id, "sender": sender, "at": AT},
    )


def test_upgrade_keys_the_inbox_by_sender_and_makes_invited_people_members(
    database_url: str,
) -> None:
    db = Database(database_url)
    try:
        _upgrade(db, "0012")
        with db.engine.begin() as conn:
            _person(conn, "olivia", '["owner"]')
            for person in ("invited", "tokened", "stranger", "self"):
                _person(conn, person, "[]")
            _credential(conn, "l-1", "signin", "invited", "olivia")
            _credential(conn, "t-1", "api_token", "tokened", "olivia")
            _credential(conn, "l-2", "signin", "stranger", "/web")  # the hub's own: no one's act
            _credential(conn, "t-2", "api_token", "self", "self")
            _inbox(conn, "r-1", "web:ada", "m-1")
        db.migrate()
        with db.engine.begin() as conn:
            _inbox(conn, "r-2", "web:bob", "m-1")  # another sender, the same id: a new event
            stored = conn.execute(sa.text("SELECT id, roles FROM person")).all()
        roles: dict[str, object] = {row[0]: row[1] for row in stored}
        as_lists = {k: v if isinstance(v, list) else json.loads(str(v)) for k, v in roles.items()}
        assert as_lists == {
            "olivia": ["owner"],
            "invited": ["member"],
            "tokened": ["member"],
            "stranger": [],
            "self": [],
        }
    finally:
        db.dispose()
