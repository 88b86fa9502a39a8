"""Engine, sessions and migrations for SQLite (default) and PostgreSQL (by URL)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlmodel import Session, SQLModel

from hub.store import redacting


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything the hub stores is UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


MIGRATIONS = Path(__file__).parent / "migrations"
_BUSY_TIMEOUT_MS = 30000  # how long a write waits for another's lock
_SCRUB = "animahub.scrub"  # a Connection.info key: this transaction overwrote a secret


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        # Bounded waits: the hub calls the database from its event loop, and a server that
        # is shutting down accepts a connection and never answers it.
        engine = create_engine(
            url,
            pool_pre_ping=True,
            pool_size=10,
            max_overflow=10,
            pool_timeout=10,
            # Which process a server connection is, in pg_stat_activity (several workers).
            connect_args={"connect_timeout": 5, "application_name": f"animahub {os.getpid()}"},
        )
    redacting.install(engine)  # no secret reaches a kept column, whoever writes it
    return engine


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets readers run during a write; NORMAL sync is durable across process crashes
    # (the hub's failure model), only a power cut can lose the last commits.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    # A row rewritten to redact a secret leaves no copy of its old bytes in the page's free
    # space. Debian's SQLite is built with this on; macOS's and others' are not.
    cur.execute("PRAGMA secure_delete=ON")
    cur.close()


def scrub_after_commit(conn: Connection) -> None:
    """Mark the caller's transaction (one of `Database.write`'s) as having overwritten a
    secret: once it commits, the database keeps no earlier copy of it where it can."""
    conn.info[_SCRUB] = True


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent). A database already there is
    left without importing alembic: its import and run cost a start ~0.3 s of CPU."""
    if _revision_of(engine) == _HEAD:
        return
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            # Workers started at once migrate one after another (each CREATE TABLE racing
            # another's would fail); alembic then reads the revision the first one left.
            conn.execute(_ADVISORY_LOCK, {"key": "animahub:migrate"})
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


# Held until the transaction ends (committed, or rolled back by an error or a lost session).
_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def _head_revision() -> str:
    """The newest revision: the one no migration names as its `down_revision` (the chain
    is linear; tests/store/test_schema.py checks it against alembic's own view)."""
    found: dict[str, str | None] = {}
    for file in MIGRATIONS.joinpath("versions").glob("*.py"):
        source = file.read_text(encoding="utf-8")
        revision = re.search(r"^revision = ['\"](\w+)['\"]", source, re.M)
        down = re.search(r"^down_revision = ['\"](\w+)['\"]", source, re.M)
        if revision:
            found[revision[1]] = down[1] if down else None
    heads = set(found) - set(found.values())
    return heads.pop() if len(heads) == 1 else ""  # "" (never a revision): ask alembic


def _revision_of(engine: Engine) -> str | None:
    """The database's revision, or None when it has none yet."""
    with engine.connect() as conn:
        if not engine.dialect.has_table(conn, "alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


_HEAD = _head_revision()


class Database:
    """The one handle on the hub database that the composition root hands out."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)

    def migrate(self) -> None:
        migrate(self.engine)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A transaction for the hot path: Core statements skip the ORM's unit of work,
        which costs more than the SQLite write itself."""
        with self.engine.begin() as conn:
            try:
                yield conn
            finally:  # the key lives on the pooled DBAPI connection: never leave it behind
                scrub = conn.info.pop(_SCRUB, False)
        if scrub:
            self.scrub()

    def scrub(self) -> None:
        """Leave no earlier version of a rewritten row in SQLite's write-ahead log: copy it
        into the database and truncate the log to nothing. A reader still on an older
        snapshot makes this give up after 250 ms (a later scrub finishes it). PostgreSQL
        keeps an old row version until autovacuum and in its own WAL, the server's to
        manage (docs/operations.md)."""
        if self.engine.dialect.name != "sqlite":
            return
        with self.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA busy_timeout=250")  # it runs on the event loop
            try:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")

    @contextmanager
    def exclusively(self, name: str) -> Iterator[None]:
        """One process at a time among those sharing a PostgreSQL runs the block (naming a
        new person, a library creating its tables at start); the block's own writes commit
        inside it. Nothing on SQLite, which is one process's (hub/cli/runfile.py)."""
        if self.engine.dialect.name != "postgresql":
            yield
            return
        with self.engine.connect() as conn:
            conn.execute(_ADVISORY_LOCK, {"key": f"animahub:{name}"})
            yield
            conn.commit()  # the lock ends with this transaction, after the block's writes

    def dispose(self) -> None:
        self.engine.dispose()


def row_values(row: SQLModel) -> dict[str, Any]:
    """A model's column values for a Core insert (an unset autoincrement id left out)."""
    values = row.model_dump()
    if values.get("id", "") is None:
        del values["id"]
    return values
