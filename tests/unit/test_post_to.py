"""`post_to`: the one way a heartbeat, a cron and a task post to their resolved targets
(hub/delivery/targets.py), on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from hub.delivery.outbox import Outbox
from hub.delivery.targets import Post, Resolved, post_to
from hub.messages import Address, AddressKind, DeliveryKind
from hub.store.db import Database
from hub.store.models import DeliveryRow
from tests.conftest import make_settings

CHANNEL = Address("slack", "T1", "C1", None, AddressKind.CHANNEL)
POST = Post("the briefing", DeliveryKind.REPORT, "aria", "task:7", "task 7")


def deliveries(db: Database) -> list[DeliveryRow]:
    with db.session() as session:
        return list(session.exec(select(DeliveryRow).order_by(col(DeliveryRow.address))).all())


def test_a_resolved_target_gets_the_text_and_one_that_is_not_its_failure(
    db: Database, home: Path
) -> None:
    outbox = Outbox(db, {}, make_settings(home).outbox)
    gone = Resolved("dm:telegram:42", error="no direct conversation yet")
    with db.write() as conn:
        assert post_to(conn, outbox, POST, Resolved(str(CHANNEL), CHANNEL))
        assert not post_to(conn, outbox, POST, gone)
    failed, sent = sorted(deliveries(db), key=lambda d: d.status)
    assert (failed.status, sent.status) == ("failed", "pending")
    assert (sent.text, sent.kind, sent.anima) == ("the briefing", "report", "aria")
    assert sent.idempotency_key == f"task:7>{CHANNEL}"
    # The failed row names what failed, never the text meant for the other target.
    assert failed.text == "(task 7: dm:telegram:42 cannot be reached: no direct conversation yet)"
    assert (failed.address, failed.address_kind) == ("dm:telegram:42", "dm")
    assert failed.idempotency_key == "task:7>dm:telegram:42"
    assert failed.error == "no direct conversation yet"


def test_a_target_posted_under_the_same_key_again_is_refused(db: Database, home: Path) -> None:
    outbox = Outbox(db, {}, make_settings(home).outbox)
    target = Resolved(str(CHANNEL), CHANNEL)
    with db.write() as conn:
        post_to(conn, outbox, POST, target)
    with pytest.raises(IntegrityError), db.write() as conn:
        post_to(conn, outbox, POST, target)
    assert len(deliveries(db)) == 1
