"""One sender per address, across every hub worker on the database (docs/scale.md, "The
outbox").

Deliveries to one address go out in creation order, so only one sender may work on an
address at a time. In one process the outbox's own `_busy` map kept that; with several
workers on one PostgreSQL it is a row: `outbox_claim(address, holder, epoch, expires_at)`.

- A sender *claims* the address before it reads the address's deliveries: the row is
  inserted, or taken over when the previous claim has expired. Each take grows `epoch`.
- Every write of its progress (the mark before a chunk goes out, the platform ids after,
  the status at the end) *renews* the claim in the same transaction, and is refused when
  the claim is no longer its own at that epoch (`ClaimLost`): a sender that was stopped
  (a paused process, a lost connection) past its expiry records nothing, and the sender
  that took over finds the mark it left and treats that chunk as maybe sent.
- A sender that is done *releases* the claim, so the next delivery to the address is sent
  by whichever worker finds it first, without waiting for the expiry.

Times are the workers' own clocks (the outbox's clock), not the database's: the expiry is
minutes (`[outbox] claim_ttl_s`), clocks kept by NTP differ by milliseconds, and the tests
drive the outbox on a manual clock. A dead sender's claim comes back after its expiry.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from hub.store.db import Database
from hub.store.models import OutboxClaimRow


class ClaimLost(RuntimeError):
    """The sender's claim on an address expired and was taken: it must stop at once."""


class AddressClaims:
    """The claims of one outbox (one worker): `holder` names it in the rows."""

    def __init__(self, db: Database, holder: str, ttl: timedelta) -> None:
        self._db = db
        self.holder = holder
        self.ttl = ttl
        dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
        self._insert = dialect.insert(OutboxClaimRow)

    def claim(self, address: str, now: datetime) -> int | None:
        """Take `address` if it is free or its claim expired: the epoch it is held at, or
        None when another sender holds it."""
        ins = self._insert.values(
            address=address, holder=self.holder, epoch=1, expires_at=now + self.ttl
        )
        take = ins.on_conflict_do_update(
            index_elements=[col(OutboxClaimRow.address)],
            set_={
                "holder": ins.excluded.holder,
                "epoch": col(OutboxClaimRow.epoch) + 1,
                "expires_at": ins.excluded.expires_at,
            },
            where=col(OutboxClaimRow.expires_at) <= now,
        ).returning(col(OutboxClaimRow.epoch))
        with self._db.write() as conn:
            epoch = conn.execute(take).scalar()
        return None if epoch is None else int(epoch)

    def renew(self, conn: Connection, address: str, epoch: int, now: datetime) -> None:
        """In the caller's transaction: extend the claim, or raise ClaimLost (which rolls
        the caller's write back) when it is no longer this sender's."""
        renewed = conn.execute(
            update(OutboxClaimRow)
            .where(
                col(OutboxClaimRow.address) == address,
                col(OutboxClaimRow.holder) == self.holder,
                col(OutboxClaimRow.epoch) == epoch,
            )
            .values(expires_at=now + self.ttl)
        ).rowcount
        if not renewed:
            raise ClaimLost(f"the claim on {address} at epoch {epoch} was taken by another sender")

    def release(self, address: str, epoch: int) -> None:
        with self._db.write() as conn:
            conn.execute(
                delete(OutboxClaimRow).where(
                    col(OutboxClaimRow.address) == address,
                    col(OutboxClaimRow.holder) == self.holder,
                    col(OutboxClaimRow.epoch) == epoch,
                )
            )


def forget_claims(db: Database) -> int:
    """At the start of the one hub that holds the database: every claim is an earlier
    life's, and waiting out its expiry would only delay that address's deliveries."""
    with db.write() as conn:
        return int(conn.execute(delete(OutboxClaimRow)).rowcount)
