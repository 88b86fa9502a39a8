"""Hints from the other hub workers on one PostgreSQL: LISTEN on the channels the database's
triggers NOTIFY (migration 0021; docs/scale.md, "Caches" and "The outbox").

- `hub_changes`, payload the kind: a cache of that kind is stale (hub/store/versions.py).
- `outbox`: deliveries were added; the outbox looks now rather than at its next poll.
- `inbox` and `turn_events` (with `[storage] shared`): a row was assigned to an Anima's
  holder, and a turn's row changed (hub/inbound/shared.py).

A hint only shortens a wait: without it every cache is re-checked within a second and the
outbox looks every `poll_interval_s`. So a lost hint costs time, never a change. A listener
that (re)connects calls `on_connect` first: whatever was said while no one listened is
treated as said. The connection is one psycopg connection of its own, in autocommit (a
LISTEN inside a transaction hears nothing until it ends); when it drops, `run` raises and
the hub's Supervisor starts it again after a backoff.

PostgreSQL only: one process on SQLite has no one else to hear from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from hub.supervise import Part

log = logging.getLogger(__name__)

HUB_CHANGES = "hub_changes"
OUTBOX = "outbox"
TURN_EVENTS = "turn_events"  # payload: an inbox row's id, whose status or attempts changed
KEEPALIVE_S = 30.0


def conninfo(database_url: str) -> str:
    """The libpq address of a SQLAlchemy `postgresql+psycopg://` URL."""
    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class Listener:
    def __init__(
        self,
        database_url: str,
        handlers: Mapping[str, Callable[[str], None]],
        on_connect: Callable[[], None],
        name: str = "animahub listen",
    ) -> None:
        self._conninfo = conninfo(database_url)
        self._name = name[:63]  # its application_name: which worker's, in pg_stat_activity
        self._handlers = dict(handlers)
        self._on_connect = on_connect
        self.heard = 0  # notifications handled, for tests and health
        self.backend_pid: int | None = None  # the server process of the LISTEN connection

    async def run(self, part: Part) -> None:
        """Listen until the connection drops (then raise, for the Supervisor to restart)."""
        async with await psycopg.AsyncConnection.connect(
            self._conninfo, autocommit=True, application_name=self._name
        ) as conn:
            for channel in self._handlers:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.backend_pid = conn.info.backend_pid
            self._on_connect()
            part.ok()
            while True:
                async for note in conn.notifies(timeout=KEEPALIVE_S):
                    handler = self._handlers.get(note.channel)
                    if handler is not None:
                        handler(note.payload)
                        self.heard += 1
                # Quiet for a while: a connection cut without a word (a network gone) would
                # wait here for ever; a statement on a dead one raises instead.
                await conn.execute("SELECT 1")
