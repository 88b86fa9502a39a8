"""Several hub workers on one PostgreSQL (`[storage] shared`, docs/scale.md): turns a second
at 1, 2 and 3 worker processes, the database's transactions and row writes per turn, and
how long a message waits when the worker holding its Anima is killed (failover).

Each level is a fresh database and data root: `animahub init --demo`, `--animas` more Animas
(so that the partitions spread them over the workers), then `--workers` processes of
`animahub start` (memory off: with `shared`, memory needs a Qdrant server, which cannot be
installed here; the scheduler off). `--messages` web-chat messages are sent over HTTP by
`--concurrency` threads, each with its own conversation, to the workers in turn; a message
counts when its stream ends with `done`. The offline responder answers (no model): this
measures the hub and the database, not a model. Per-person pacing is lifted
(`[runtime] person_messages_per_minute`), or it would be what is measured.

Transactions and row writes come from `pg_stat_database` and `pg_stat_user_tables` before
and after (the whole database: the workers' lease renewals, sweeps and listeners' keepalives
are counted too, and the waits for PostgreSQL to flush its counters add some of them).

PostgreSQL's CPU time (`/proc`, so a local server on Linux) is read at the same points: its
living processes' user and system time, plus what the postmaster has reaped of the exited
ones. From it, the server's CPU a turn and so how many turns a second one of its cores
carries before the database is the limit (bench/README.md derives workers from it).

Failover: `--kills` times, the holder of an Anima's partition (from the `lease` table) is
killed with SIGKILL and a message to that Anima is sent through another worker; the time is
from the kill to its `done`, then the killed worker is started again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from sqlalchemy import create_engine, make_url, text

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hub.store.leases import partition_of  # noqa: E402
from hub.store.ownership import PARTITIONS  # noqa: E402
from tests.e2e.hubproc import HubProcess, cli, free_port  # noqa: E402

_STATS = text(
    "SELECT xact_commit + xact_rollback AS xacts, "
    "(SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables) "
    "AS writes FROM pg_stat_database WHERE datname = current_database()"
)


def fresh_database(url: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def stats(url: str, flush_s: float) -> tuple[int, int]:
    # PostgreSQL 15 flushes a session's counters at most once a second, and an idle one's
    # within ten: read them once every worker's have been flushed.
    time.sleep(flush_s)
    engine = create_engine(url)
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_stat_clear_snapshot()"))
        xacts, writes = conn.execute(_STATS).one()
    engine.dispose()
    return int(xacts), int(writes)


def pg_cpu_s() -> float:
    """CPU seconds the local PostgreSQL's processes have used: each living one's user and
    system time, and the postmaster's reaped children's (backends that have exited)."""
    names: dict[int, str] = {}
    times: dict[int, tuple[int, int, int]] = {}  # pid: (parent, own ticks, children's)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
        except OSError:
            continue  # exited meanwhile
        pid = int(stat.parent.name)
        names[pid] = raw[raw.index("(") + 1 : raw.rindex(")")]
        rest = raw[raw.rindex(")") + 2 :].split()  # from field 3 (state) on
        utime, stime, cutime, cstime = (int(x) for x in rest[11:15])
        times[pid] = (int(rest[1]), utime + stime, cutime + cstime)
    ticks = 0
    for pid, (parent, own, children) in times.items():
        if names[pid] != "postgres":
            continue
        ticks += own
        if names.get(parent) != "postgres":  # the postmaster: its exited backends too
            ticks += children
    return ticks / os.sysconf("SC_CLK_TCK")


def chat(worker: HubProcess, anima: str, message: str, conversation: str) -> bool:
    body = {"message": message, "conversation_id": conversation, "user": "alice"}
    with httpx.stream(
        "POST", f"{worker.url}/api/chat/{anima}", json=body, headers=worker.owner(), timeout=120
    ) as response:
        every = list(response.iter_lines())
    lines = [x for x in every if x.startswith("data: ")]
    ended = bool(lines) and json.loads(lines[-1][6:]) == {"type": "done"}
    if not ended:
        print(f"{anima} via {worker.url}: {response.status_code} {every[-5:]}", file=sys.stderr)
    return ended


def holder_pid(url: str, anima: str) -> int:
    key = f"partition:{partition_of(anima, PARTITIONS)}"
    engine = create_engine(url)
    query = text("SELECT holder FROM lease WHERE key = :k AND expires_at > now()")
    try:
        with engine.connect() as conn:
            for _ in range(600):
                holder = conn.execute(query, {"k": key}).scalar()
                if holder:
                    return int(str(holder).split(":")[-2])
                time.sleep(0.1)
    finally:
        engine.dispose()
    raise TimeoutError(f"nobody holds {key}")


def level(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    fresh_database(args.url)
    with TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        env = {"ANIMAHUB_STORAGE__DATABASE_URL": args.url}
        made = cli(home, "init", "--demo", **env)
        assert made.returncode == 0, made.stdout + made.stderr
        names = ["mika", "aria", "kai"]
        for n in range(args.animas):
            name = f"worker{n:02d}"
            made = cli(home, "anima", "create", "--name", name, "--role", "engineer", **env)
            assert made.returncode == 0, made.stdout + made.stderr
            names.append(name)
        shared = {
            **env,
            "ANIMAHUB_STORAGE__SHARED": "true",
            "ANIMAHUB_STORAGE__LEASE_TTL_S": str(args.lease_ttl_s),
            "ANIMAHUB_MEMORY__ENABLED": "false",
            "ANIMAHUB_SCHEDULER__ENABLED": "false",
            "ANIMAHUB_RUNTIME__PERSON_MESSAGES_PER_MINUTE": "100000",
            "ANIMAHUB_RUNTIME__PERSON_BURST": "100000",
            "ANIMAHUB_RUNTIME__CHANNEL_MESSAGES_PER_MINUTE": "100000",
            "ANIMAHUB_RUNTIME__CHANNEL_BURST": "100000",
        }
        procs = [HubProcess(home, free_port(), **shared).start() for _ in range(workers)]
        try:
            time.sleep(args.lease_ttl_s)  # the workers balance their partitions
            return measure(args, procs, names, home, shared)
        finally:
            for proc in procs:
                if proc.proc is not None and proc.proc.poll() is None:
                    proc.stop(signal.SIGTERM)


def measure(
    args: argparse.Namespace,
    procs: list[HubProcess],
    names: list[str],
    home: Path,
    shared: dict[str, str],
) -> dict[str, Any]:
    def one(i: int) -> bool:
        return chat(procs[i % len(procs)], names[i % len(names)], f"message {i}", f"c{i % 97}")

    # The workers' own background (lease renewals, sweeps, keepalives), over a quiet spell.
    quiet = [(*stats(args.url, args.flush_s), pg_cpu_s()) for _ in range(2)]
    rates = [(quiet[1][i] - quiet[0][i]) / args.flush_s for i in range(3)]
    began = time.monotonic()
    with ThreadPoolExecutor(args.concurrency) as pool:
        done = sum(pool.map(one, range(args.messages)))
    took = time.monotonic() - began
    after = (*stats(args.url, args.flush_s), pg_cpu_s())
    spell = took + args.flush_s  # from the last quiet read to this one
    per_turn = [(after[i] - quiet[1][i] - rates[i] * spell) / max(1, done) for i in range(3)]
    figures: dict[str, Any] = {
        "workers": len(procs),
        "messages": args.messages,
        "answered": done,
        "turns_per_s": round(done / took, 2),
        "transactions_per_turn": round(per_turn[0], 1),
        "row_writes_per_turn": round(per_turn[1], 1),
        "background_transactions_per_s": round(rates[0], 1),
        # PostgreSQL's CPU: a turn's, its background's, and the turns a core carries.
        "pg_cpu_ms_per_turn": round(per_turn[2] * 1000, 2),
        "pg_background_cpu_ms_per_s": round(rates[2] * 1000, 1),
        "pg_core_turns_per_s": round(1 / per_turn[2]) if per_turn[2] > 0 else None,
    }
    if len(procs) > 1 and args.kills:
        figures["failover_s"] = failover(args, procs, names, home, shared)
    return figures


def failover(
    args: argparse.Namespace,
    procs: list[HubProcess],
    names: list[str],
    home: Path,
    shared: dict[str, str],
) -> dict[str, float]:
    times = []
    for k in range(args.kills):
        anima = names[k % len(names)]
        pid = holder_pid(args.url, anima)
        victim = next(p for p in procs if p.proc is not None and p.proc.pid == pid)
        other = next(p for p in procs if p is not victim)
        began = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        victim.proc.wait(timeout=30)  # type: ignore[union-attr]
        assert chat(other, anima, f"after kill {k}", f"kill{k}")
        times.append(time.monotonic() - began)
        procs[procs.index(victim)] = HubProcess(home, free_port(), **shared).start()
        time.sleep(args.lease_ttl_s)  # balanced again before the next kill
    ordered = sorted(times)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "max": round(ordered[-1], 2),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a scratch PostgreSQL database (dropped)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--messages", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=12)
    parser.add_argument("--animas", type=int, default=9, help="besides the three demo ones")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--lease-ttl-s", type=float, default=6.0)
    parser.add_argument("--flush-s", type=float, default=11.0, help="wait for pg counters")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    make_url(args.url)  # a clear error for a malformed one, before anything starts
    results = [level(args, n) for n in args.workers]
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
