"""One hub per data root and per database: exclusive locks, and a run file saying where
the hub listens.

Commands that change state ask `running_hub()`: with a live hub they go through its API,
otherwise they take the lock themselves and act in-process, so two processes never write
the same database or index. `hold_database` covers a database outside the data root (a
PostgreSQL server, a SQLite file elsewhere) that two data roots could name: two hubs on one
database would both send its pending deliveries.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

LOCK_NAME = "hub.lock"
RUN_NAME = "hub.json"


class HubBusy(Exception):
    """Another process holds the data root."""


@dataclass(frozen=True, slots=True)
class RunningHub:
    pid: int
    url: str


@contextmanager
def _locked(path: Path, what: str) -> Iterator[None]:
    """Hold an exclusive lock on the file `path` (created if missing); HubBusy naming
    `what` if another process holds it. The lock ends with the block or the process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = open(path, "a+")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise HubBusy(f"another AnimaHub process is using {what}") from exc
        yield
    finally:
        handle.close()


@contextmanager
def hold_data_root(home: Path, url: str | None = None) -> Iterator[None]:
    """Hold the data root's lock; with a URL, also advertise the hub in the run file."""
    with _locked(home / LOCK_NAME, str(home)):
        run_file = home / RUN_NAME
        if url is not None:
            run_file.write_text(json.dumps({"pid": os.getpid(), "url": url}))
        try:
            yield
        finally:
            if url is not None:
                run_file.unlink(missing_ok=True)


# The PostgreSQL advisory lock every hub takes on its database ("anima" in ASCII).
PG_LOCK_KEY = 0x616E696D61


@contextmanager
def hold_database(url: str) -> Iterator[None]:
    """Hold the database for this process: a PostgreSQL session advisory lock, or a lock
    file beside a SQLite file. HubBusy if another hub holds it."""
    # Here, not at the top: every CLI command imports this module, few hold the database.
    from sqlalchemy import create_engine, make_url, text
    from sqlalchemy.pool import NullPool

    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            yield
            return
        path = Path(parsed.database)
        with _locked(path.with_name(path.name + ".hub-lock"), f"the database {path}"):
            yield
        return
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:  # the lock lives as long as this session
            taken = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": PG_LOCK_KEY})
            if not taken.scalar():
                where = parsed.render_as_string(hide_password=True)
                raise HubBusy(f"another AnimaHub process is using the database {where}")
            conn.commit()
            yield
    finally:
        engine.dispose()


def running_hub(home: Path) -> RunningHub | None:
    """The hub serving this data root, if one holds the lock and has said where it listens."""
    lock = home / LOCK_NAME
    if not lock.exists():
        return None
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: someone is running
        else:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return None
    try:
        data = json.loads((home / RUN_NAME).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        raise HubBusy(f"another AnimaHub process is using {home}") from None
    return RunningHub(pid=int(data["pid"]), url=str(data["url"]))
