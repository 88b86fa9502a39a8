"""Which worker runs an Anima, and the guard on its writes (hub/store/ownership.py), on the
real PostgreSQL: a worker whose partition was taken over has its guarded writes refused and
counted, and a takeover waits for a guarded write in progress, so that write lands before
the new holder starts, never after."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, text, update
from sqlmodel import col

from hub.store.db import Database
from hub.store.models import LeaseRow
from hub.store.ownership import Fenced, Partitions

pytestmark = pytest.mark.postgres
PARTITIONS = 4


def worker(db: Database, me: str) -> Partitions:
    return Partitions(db, me, partitions=PARTITIONS, ttl_s=30.0)


def lapse(db: Database, holder: str) -> None:
    """The holder stopped renewing long ago (a paused process): its leases have expired."""
    with db.write() as conn:
        conn.execute(
            update(LeaseRow)
            .where(col(LeaseRow.holder) == holder)
            .values(expires_at=func.now() - text("interval '1 hour'"))
        )


def test_a_worker_whose_partition_was_taken_over_has_its_writes_refused(pg: Database) -> None:
    a = worker(pg, "a")
    gained, lost = a.step()
    assert gained == set(range(PARTITIONS)) and lost == set()
    assert a.holds("aria")
    with pg.write() as conn:
        a.guard(conn, "aria")  # its own: allowed

    lapse(pg, "a")
    b = worker(pg, "b")
    b.step()
    assert b.holds("aria")
    with pytest.raises(Fenced), pg.write() as conn:
        a.guard(conn, "aria")
    assert a.refused == 1
    with pg.write() as conn:
        b.guard(conn, "aria")
    assert b.refused == 0


def test_a_takeover_waits_for_a_guarded_write_in_progress(pg: Database) -> None:
    a, b = worker(pg, "a"), worker(pg, "b")
    a.step()
    took: list[set[int]] = []
    taker = threading.Thread(target=lambda: took.append(b.step()[0]))
    lapse(pg, "a")  # expired, but not yet taken: still a's to write under
    with pg.write() as conn:
        a.guard(conn, "aria")  # holds the lease row FOR SHARE until this transaction ends
        taker.start()
        taker.join(timeout=1.0)
        assert taker.is_alive()  # b's takeover waits for the write to end
    taker.join(timeout=10.0)
    assert not taker.is_alive()
    assert b.partition("aria") in took[0]
    with pytest.raises(Fenced), pg.write() as conn:
        a.guard(conn, "aria")
