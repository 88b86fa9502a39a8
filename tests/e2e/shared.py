"""Three `animahub start` processes on one PostgreSQL and one data root with `[storage]
shared` (docs/scale.md), as the process tests of several workers run them."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path

from hub.store.ownership import PARTITIONS
from tests.conftest import postgres_url
from tests.e2e.hubproc import HubProcess, cli, free_port

# What every worker here runs with: short leases (6 s, the default 15 s), no memory (with
# `shared` it needs a Qdrant server, which cannot be installed here).
SHARED = {
    "ANIMAHUB_STORAGE__SHARED": "true",
    "ANIMAHUB_STORAGE__LEASE_TTL_S": "6",
    "ANIMAHUB_MEMORY__ENABLED": "false",
}
# The scheduler off where the test is not about it; nobody paced where one person (or a
# script) sends everything at once.
QUIET = {"ANIMAHUB_SCHEDULER__ENABLED": "false"}
UNPACED = {
    "ANIMAHUB_RUNTIME__PERSON_MESSAGES_PER_MINUTE": "100000",
    "ANIMAHUB_RUNTIME__PERSON_BURST": "100000",
}


def initialised(home: Path) -> str:
    """`animahub init --demo` on an empty test database; its URL."""
    url = postgres_url()
    made = cli(home, "init", "--demo", ANIMAHUB_STORAGE__DATABASE_URL=url)
    assert made.returncode == 0, made.stdout + made.stderr
    return url


def launch(home: Path, url: str, env: dict[str, str], count: int = 3) -> list[HubProcess]:
    """`count` workers started at once, each once it answers; none left running if one
    does not come up."""
    every = {"ANIMAHUB_STORAGE__DATABASE_URL": url, **SHARED, **env}
    workers = [HubProcess(home, free_port(), **every).launch() for _ in range(count)]
    try:
        return [worker.ready(120) for worker in workers]
    except BaseException:
        stop_all(workers)
        raise


def stop_all(workers: list[HubProcess]) -> None:
    for worker in workers:
        if worker.proc is not None and worker.proc.poll() is None:
            worker.kill()


@contextlib.contextmanager
def running(home: Path, env: dict[str, str]) -> Iterator[list[HubProcess]]:
    """Three workers on a fresh database, killed at the end whatever happened."""
    workers = launch(home, initialised(home), env)
    try:
        yield workers
    finally:
        stop_all(workers)


def balanced(workers: list[HubProcess]) -> bool:
    """Whether the workers share the partitions evenly (none moves unless one leaves)."""
    held: list[int] = [w.get("/api/system/health")["worker"]["partitions"] for w in workers]
    return sum(held) == PARTITIONS and max(held) <= math.ceil(PARTITIONS / len(workers))
