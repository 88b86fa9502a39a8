"""What partition leases cost the database (hub/store/leases.py, docs/scale.md).

`--workers` balancers share `--partitions` partition leases on a PostgreSQL database (the
URL's schema is emptied first: give a scratch database). Each steps `--rounds` times in
turn, as each worker would every ttl / 3. Measured: a step's time (p50, p95) at steady state,
the statements a step sends (counted by SQLAlchemy's events), and so the statements per
second the whole cluster sends for its leases at a given renewal period. None of it grows
with the number of Animas: an Anima is only hashed to its partition.

    .venv/bin/python bench/leases.py --url postgresql+psycopg://…/scratch [--workers 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, event, text

from hub.store.db import Database
from hub.store.leases import Balancer


def empty(url: str) -> None:
    with create_engine(url, isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))


def main(args: argparse.Namespace) -> dict[str, Any]:
    empty(args.url)
    db = Database(args.url)
    db.migrate()
    statements = 0

    def count(*_: object) -> None:
        nonlocal statements
        statements += 1

    event.listen(db.engine, "before_cursor_execute", count)
    workers = [
        Balancer(db, f"w{n}", args.partitions, ttl_s=args.ttl, margin_s=args.ttl / 3)
        for n in range(args.workers)
    ]
    for _ in range(3):  # settle: every worker at its share
        for worker in workers:
            worker.step()
    statements = 0
    steps_ms: list[float] = []
    held: list[int] = []
    for _ in range(args.rounds):
        for worker in workers:
            began = time.perf_counter()
            share = worker.step()
            steps_ms.append((time.perf_counter() - began) * 1000)
            held.append(len(share.epochs))
    per_step = statements / len(steps_ms)
    period = args.ttl / 3
    db.dispose()
    return {
        "workers": args.workers,
        "partitions": args.partitions,
        "held_per_worker": sorted(set(held)),
        "step_ms_p50": round(statistics.median(steps_ms), 2),
        "step_ms_p95": round(statistics.quantiles(steps_ms, n=20)[18], 2),
        "statements_per_step": round(per_step, 2),
        "renewal_period_s": period,
        "cluster_statements_per_s": round(args.workers * per_step / period, 2),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a scratch PostgreSQL database")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=256)
    parser.add_argument("--ttl", type=float, default=15.0, help="the lease, seconds")
    parser.add_argument("--rounds", type=int, default=200)
    return parser.parse_args(argv)


if __name__ == "__main__":
    print(json.dumps(main(parse()), indent=2))
