"""Partition leases with a fencing epoch (hub/store/leases.py, docs/scale.md), on the real
PostgreSQL: shares even out as workers come and go, no partition is ever held by two, a
lapsed or released lease is taken again at a higher epoch, and a write fenced by the old
epoch takes no effect."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import col

from hub.store.db import Database
from hub.store.leases import Balancer, Held, fenced, holders, partition_key, partition_of
from hub.store.models import WorkerRow

pytestmark = pytest.mark.postgres
PARTITIONS = 12


def balancer(db: Database, me: str, ttl_s: float = 30.0) -> Balancer:
    return Balancer(db, me, PARTITIONS, ttl_s=ttl_s, margin_s=ttl_s / 3)


def rounds(workers: list[Balancer], times: int = 3) -> dict[str, Held]:
    """Step every worker `times` times in turn; after each step no key has two holders."""
    held: dict[str, Held] = {}
    for _ in range(times):
        for worker in workers:
            held[worker._me] = worker.step()
            owners: dict[str, str] = {}
            for name, share in held.items():
                for key in share.epochs:
                    assert key not in owners, f"{key} held by {owners[key]} and {name}"
                    owners[key] = name
    return held


def test_three_workers_share_the_partitions_evenly(pg: Database) -> None:
    workers = [balancer(pg, name) for name in ("a", "b", "c")]
    held = rounds(workers)
    assert sorted(len(h.epochs) for h in held.values()) == [4, 4, 4]
    assert all(h.live_workers == 3 for h in held.values())
    every = set().union(*(h.epochs for h in held.values()))
    assert every == {partition_key(n) for n in range(PARTITIONS)}


def test_a_worker_that_joins_gets_its_share_from_the_others(pg: Database) -> None:
    a, b = balancer(pg, "a"), balancer(pg, "b")
    assert sorted(len(h.epochs) for h in rounds([a, b]).values()) == [6, 6]
    held = rounds([a, b, balancer(pg, "c")])
    assert sorted(len(h.epochs) for h in held.values()) == [4, 4, 4]


def test_a_lapsed_worker_is_fenced_out_and_its_partitions_taken_at_a_higher_epoch(
    pg: Database,
) -> None:
    a, b = balancer(pg, "a", ttl_s=0.6), balancer(pg, "b", ttl_s=0.6)
    before = rounds([a, b])["b"]
    lost = sorted(before.epochs)
    assert len(lost) == PARTITIONS // 2
    time.sleep(0.8)  # b stops renewing (a pause, a dead process): its leases lapse
    after = a.step()
    assert len(after.epochs) == PARTITIONS  # the only live worker takes every partition
    for key in lost:
        assert after.epochs[key] == before.epochs[key] + 1
    assert {holder for holder, _, _ in holders(pg, lost).values()} == {"a"}

    # A write b decided under its old epoch takes no effect; a's does.
    key = lost[0]

    def write(epoch: int) -> int:
        with pg.write() as conn:
            done = conn.execute(
                update(WorkerRow)
                .where(col(WorkerRow.id) == "a", fenced(key, epoch))
                .values(seen_at=WorkerRow.seen_at)
            )
        return int(done.rowcount or 0)

    assert write(before.epochs[key]) == 0
    assert write(after.epochs[key]) == 1


def test_a_worker_stopping_hands_its_partitions_over_at_once(pg: Database) -> None:
    a, b = balancer(pg, "a"), balancer(pg, "b")
    before = rounds([a, b])["b"]
    assert len(before.epochs) == PARTITIONS // 2
    b.release_all()  # SIGTERM: no waiting for the 30 s lease to lapse
    after = a.step()
    assert after.live_workers == 1 and len(after.epochs) == PARTITIONS
    assert all(after.epochs[key] == epoch + 1 for key, epoch in before.epochs.items())


def test_the_holder_stops_before_its_lease_can_lapse(pg: Database) -> None:
    a = balancer(pg, "a", ttl_s=30.0)
    sent = time.monotonic()
    held = a.step()
    (_, _, expires_at), *_ = holders(pg, list(held.epochs)).values()
    assert held.safe_until <= sent + 30.0 - 10.0 + 0.5  # the margin, taken from the send
    assert expires_at is not None


def test_an_animas_partition_is_the_same_everywhere() -> None:
    assert partition_of("kai", 256) == partition_of("kai", 256)
    spread = {partition_of(f"copy{n:04d}", 256) for n in range(1000)}
    assert len(spread) > 200  # not all in a few partitions


def test_leases_refuse_sqlite_in_words(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'hub.db'}")
    with pytest.raises(ValueError, match="PostgreSQL"):
        balancer(db, "a")
    db.dispose()
