"""Platform connections that one process at a time may keep, held through a lease
(docs/scale.md, "Connections that must be single").

Telegram refuses a second long poll on one bot with 409, and each refusal ends the other's
poll too: two hub workers polling one bot loop on 409s, the failure most reported of
multi-platform hubs. So with several workers the poll is held through a lease row
`connection:<key>` (hub/store/leases.py): one worker takes it, renews it every ttl / 3, and
stops using the connection once its renewal is overdue (`held()` turns false before the
lease can expire). A worker that takes the lease over waits `quiet_s` (one poll timeout)
before its first poll, so the previous holder's last poll has ended: they never overlap.

`SoleConnection` is the one hub's: it holds every connection at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import TextClause, text
from sqlalchemy.exc import DBAPIError

from hub.store.db import Database

log = logging.getLogger(__name__)

CONNECTION = "connection:"

_TAKE = text(
    """
    INSERT INTO lease (key, holder, epoch, expires_at)
    VALUES (:key, :me, 1, now() + make_interval(secs => :ttl))
    ON CONFLICT (key) DO UPDATE
       SET epoch = lease.epoch + 1, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
     WHERE lease.expires_at <= now()
    RETURNING epoch
    """
)
_RENEW = text(
    """
    UPDATE lease SET expires_at = now() + make_interval(secs => :ttl)
     WHERE key = :key AND holder = :me AND epoch = :epoch AND expires_at > now()
    RETURNING epoch
    """
)
_RELEASE = text(
    "UPDATE lease SET expires_at = now() WHERE key = :key AND holder = :me AND epoch = :epoch"
)


class SoleConnection:
    """One hub holds the database: every connection is its own, at once."""

    async def acquire(self) -> None:
        return None

    def held(self) -> bool:
        return True

    async def release(self) -> None:
        return None


class LeasedConnection:
    def __init__(
        self,
        db: Database,
        me: str,
        key: str,
        quiet_s: float,
        *,
        ttl_s: float = 15.0,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._db = db
        self._me = me
        self._key = CONNECTION + key
        self._quiet_s = quiet_s
        self._ttl_s = ttl_s
        self._margin_s = ttl_s / 3
        self._monotonic = monotonic
        self._sleep = sleep
        self._epoch: int | None = None
        self._safe_until = 0.0
        self._renewer: asyncio.Task[None] | None = None

    async def acquire(self) -> None:
        while True:
            sent = self._monotonic()
            try:
                epoch = await asyncio.to_thread(self._write, _TAKE)
            except DBAPIError as exc:  # the database is gone for now: try again later
                log.warning("could not take %s: %s", self._key, exc.orig)
                epoch = None
            if epoch is not None:
                self._hold(epoch, sent)
                if epoch > 1:  # someone held it before: their last request ends first
                    log.info("took over %s; first use in %.0f s", self._key, self._quiet_s)
                    await self._sleep(self._quiet_s)
                return
            await self._sleep(self._ttl_s / 3)

    def _hold(self, epoch: int, sent: float) -> None:
        self._epoch = epoch
        # From when the statement was sent: the database's expiry is later than this.
        self._safe_until = sent + self._ttl_s - self._margin_s
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())

    def held(self) -> bool:
        return self._epoch is not None and self._monotonic() < self._safe_until

    async def _renew_forever(self) -> None:
        while self._epoch is not None:
            await self._sleep(self._ttl_s / 3)
            sent = self._monotonic()
            try:
                epoch = await asyncio.to_thread(self._write, _RENEW)
            except DBAPIError as exc:  # the database is gone for now: held() lapses meanwhile
                log.warning("could not renew %s: %s", self._key, exc.orig)
                continue
            if epoch is None:
                log.warning("lost %s to another worker", self._key)
                self._epoch = None
                return
            self._safe_until = sent + self._ttl_s - self._margin_s

    def _write(self, statement: TextClause) -> int | None:
        params = {"key": self._key, "me": self._me, "ttl": self._ttl_s, "epoch": self._epoch}
        with self._db.write() as conn:
            found = conn.execute(statement, params).scalar()
        return None if found is None else int(found)

    async def release(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)
            self._renewer = None
        if self._epoch is not None:
            await asyncio.to_thread(self._write, _RELEASE)
            self._epoch = None
