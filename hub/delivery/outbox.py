"""The outbox: every outbound message is a Delivery row, sent by a worker that never loses
and never doubles one.

Chunks are rendered and split once, stored on the row, and their platform ids recorded one
by one, so a retry after a 429 or a crash resumes at the first unsent chunk. Rate limits
are honoured with the platform's retry-after; other transient errors back off
exponentially; a delivery that cannot be sent ends `failed`, logged and visible in the API.

One sender works on an address at a time, keeping its deliveries in creation order: in this
process by `_busy`, across the hub workers on one database by the address's claim
(hub/delivery/claims.py), which every write of the sender's progress renews.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError
from sqlmodel import col, func, select

from hub.adapter import (
    Adapter,
    BatchSender,
    DeliveryError,
    MaybeSent,
    OutcomeUnknown,
    PermanentDeliveryError,
    RateLimited,
)
from hub.delivery.chunking import split_text
from hub.delivery.claims import AddressClaims, ClaimLost
from hub.delivery.deliveries import (
    AT_ADDRESS,
    AUDIT,
    DUE,
    INSERT,
    PENDING_AT,
    SAVE,
    Action,
    Delivery,
    Gone,
    as_values,
    cancel,
    failure_audit,
    loaded,
    progress,
    reopen,
)
from hub.live import LiveFeed
from hub.messages import (
    Address,
    AddressKind,
    DeliveryKind,
    DeliveryStatus,
    OutboundChunk,
    utcnow,
)
from hub.redaction.redact import redact
from hub.settings import OutboxSection
from hub.store.db import Database
from hub.store.models import DeliveryRow
from hub.supervise import Backoff, Part

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


def _split(adapter: Adapter, text: str) -> list[str]:
    return split_text(adapter.render(text), adapter.capabilities.max_text) or ["…"]


class Outbox:
    def __init__(
        self,
        db: Database,
        adapters: Mapping[str, Adapter],
        settings: OutboxSection,
        clock: Clock = utcnow,
        ready: Callable[[str], bool] = lambda _platform: True,
        senders: Part | None = None,
        live: LiveFeed | None = None,
        holder: str | None = None,
    ) -> None:
        self._db = db
        self._adapters = adapters
        self._live = live or LiveFeed()  # the dashboard hears of failures, retries, cancels
        # Whether a platform is up: deliveries to one that is down wait, using no attempt.
        self._ready = ready
        self._settings = settings
        self._clock = clock
        self._wake = asyncio.Event()
        self._busy: dict[str, asyncio.Task[None]] = {}  # one sender per address keeps order
        ttl = timedelta(seconds=settings.claim_ttl_s)
        self._claims = AddressClaims(db, holder or uuid.uuid4().hex, ttl)
        self._held: dict[str, int] = {}  # address -> the epoch its claim is held at
        self.refused = 0  # progress writes refused because the address's claim was lost
        self._missed = False
        self._sent_listeners: list[Callable[[Delivery], None]] = []
        # The senders' health: a write they could not make, a sender that crashed.
        self._senders = senders or Part("outbox senders", clock)
        self._backoff_db = Backoff(base_s=0.5, max_s=30.0)

    def enqueue(
        self,
        conn: Connection,
        address: Address,
        text: str,
        kind: DeliveryKind,
        anima: str,
        idempotency_key: str,
        *,
        inbox_id: str | None = None,
        answers: str | None = None,
        reply_to: str | None = None,
    ) -> Delivery:
        """Add a delivery in the caller's transaction: the one way a message is sent.

        The text is stored redacted (the hub never repeats a secret a person pasted), and
        rendered and chunked for its platform now, so the row says what will be sent. A
        second delivery with the same key raises IntegrityError. The outbox is woken once
        the caller's synchronous transaction has committed.
        """
        row = Delivery(
            id=str(uuid.uuid4()),
            idempotency_key=idempotency_key,
            address=str(address),
            channel_key=address.channel_key,
            address_kind=address.kind.value,
            text=redact(text)[0],
            kind=kind,
            anima=anima,
            inbox_id=inbox_id,
            answers=answers,
            reply_to=reply_to,
            next_attempt_at=self._clock(),
            created_at=self._clock(),
        )
        adapter = self._adapters.get(address.platform)
        if adapter is not None:
            row.chunks = _split(adapter, row.text)
        conn.execute(INSERT, [as_values(row)])
        self._wake_soon()
        return row

    def record_failed(
        self,
        conn: Connection,
        written: str,
        address_kind: AddressKind,
        text: str,
        kind: DeliveryKind,
        anima: str,
        idempotency_key: str,
        error: str,
    ) -> Delivery:
        """Record, in the caller's transaction, a post that could not even be addressed
        (`written` is the target as configured): a failed delivery, never sent, and its
        audit entry, so heartbeats, `/anima status` and the API count it."""
        now = self._clock()
        row = Delivery(
            id=str(uuid.uuid4()),
            idempotency_key=idempotency_key,
            address=written,
            channel_key=written,
            address_kind=address_kind.value,
            text=redact(text)[0],
            kind=kind,
            anima=anima,
            status=DeliveryStatus.FAILED,
            error=error,
            created_at=now,
            next_attempt_at=now,
        )
        conn.execute(INSERT, [as_values(row)])
        conn.execute(AUDIT, [failure_audit(row, error, now)])
        return row

    def _wake_soon(self) -> None:
        # After the current callback: the caller's transaction is synchronous, so it has
        # committed by then. Outside an event loop (a CLI command) no outbox runs to wake.
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().call_soon(self.wake)

    def on_sent(self, listener: Callable[[Delivery], None]) -> None:
        self._sent_listeners.append(listener)

    def wake(self) -> None:
        self._wake.set()

    async def run(self, part: Part | None = None) -> None:
        """The worker loop; cancel it to stop. Run it under a `Supervisor`: an error (the
        database is gone) ends the loop, which the supervisor reports and restarts."""
        while True:
            self._wake.clear()
            self.dispatch_due()
            if part is not None:
                part.ok()
            # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancel that arrives as
            # the wake-up does, and then this loop never ends (Hub.stop hung on it).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._settings.poll_interval_s):
                    await self._wake.wait()

    def dispatch_due(self) -> None:
        """Start a sender for every address with due deliveries (one sender per address)."""
        now = self._clock()
        with self._db.engine.connect() as conn:
            found = conn.execute(DUE, {"me": self._claims.holder, "now": now}).mappings()
            pending = [loaded(row) for row in found]
        oldest: dict[str, Delivery] = {}
        for row in pending:
            oldest.setdefault(row.address, row)
        for address, first in oldest.items():
            if first.next_attempt_at > now:
                continue  # the oldest must wait, and nothing may overtake it
            platform = address.split(":", 1)[0]
            if platform in self._adapters and not self._ready(platform):
                continue  # sent once the platform is back (Platforms wakes the outbox)
            if address in self._busy:
                self._missed = True  # look again when that sender is done
            else:
                task = asyncio.create_task(self._drain_address(address))
                self._busy[address] = task

    async def _drain_address(self, address: str) -> None:
        """Claim the address, then send its deliveries in creation order; stop at one that
        must wait, so nothing overtakes it."""
        epoch: int | None = None
        try:
            epoch = self._claim(address)
            if epoch is None:
                return  # another worker's sender holds it
            with self._db.engine.connect() as conn:
                found = conn.execute(AT_ADDRESS, {"where": address}).mappings()
                rows = [loaded(values) for values in found]
            for row in rows:
                if row.next_attempt_at > self._clock():
                    return
                try:
                    if not await self._deliver(row):
                        return
                except Gone:
                    continue  # cancelled since it was read: never sent
        except ClaimLost as exc:
            # Stopped past the claim's expiry (a paused process, a lost connection): another
            # sender has the address, and what this one did after is not recorded.
            self.refused += 1
            log.warning("stopped sending to %s: %s", address, exc)
        except Exception as exc:
            # A bug: logged with its traceback and reported; the rows are still pending and
            # are tried again after a pause, never in a hot loop.
            failures = self._senders.failing(f"{type(exc).__name__}: {exc}")
            delay = self._backoff_db.delay(failures)
            log.exception("the sender for %s crashed; trying again in %.1f s", address, delay)
            asyncio.get_running_loop().call_later(delay, self.wake)
        finally:
            del self._busy[address]
            if epoch is not None:
                self._release(address, epoch)
            if self._missed:
                self._missed = False
                self.wake()

    def _claim(self, address: str) -> int | None:
        epoch = self._claims.claim(address, self._clock())
        if epoch is not None:
            self._held[address] = epoch
        return epoch

    def _release(self, address: str, epoch: int) -> None:
        self._held.pop(address, None)
        try:
            self._claims.release(address, epoch)
        except DBAPIError as exc:  # it expires by itself; the next sender waits for that
            log.warning("could not release the claim on %s: %s", address, exc.orig)

    async def deliver(self, row: Delivery) -> bool:
        """Send what is left of one delivery, holding its address meanwhile. True when it
        is finished (sent or failed); raises ClaimLost if another sender holds it."""
        epoch = self._claim(row.address)
        if epoch is None:
            raise ClaimLost(f"another sender holds {row.address}")
        try:
            return await self._deliver(row)
        finally:
            self._release(row.address, epoch)

    async def _deliver(self, row: Delivery) -> bool:
        """Send what is left of one delivery, under its address's claim."""
        platform = row.address.split(":", 1)[0]
        adapter = self._adapters.get(platform)
        if adapter is None:  # adapters run for the platforms hub.toml enables
            reason = (
                f"{platform} is not enabled on this hub ([{platform}] enabled = true in "
                "hub.toml); retry the delivery once it is"
            )
            await self._fail(row, reason)
            return True
        if not row.chunks:  # composed while its adapter was not running
            row.chunks = _split(adapter, row.text)
        address = Address.parse(row.address, row.address_kind)
        maybe_sent: datetime | None = None
        try:
            while len(row.message_ids) < len(row.chunks):
                maybe_sent = row.sending_since  # set in an earlier life: that chunk may be out
                if maybe_sent is None:
                    row.sending_since = self._clock()
                    await self._save(row)  # written ahead: a stop from here on is noticed
                ids = await self._send_next(adapter, row, address, maybe_sent)
                row.message_ids, row.sending_since = [*row.message_ids, *ids], None
                if len(row.message_ids) < len(row.chunks):  # the last is saved with the status
                    await self._save(row)
        except (ClaimLost, Gone):
            raise  # not this sender's to record any more
        except RateLimited as exc:
            # Refused: this attempt sent nothing (an earlier life's mark stays).
            row.sending_since = maybe_sent
            await self._retry(row, exc.retry_after, str(exc))
            return False
        except PermanentDeliveryError as exc:
            row.sending_since = maybe_sent
            await self._fail(row, str(exc))
            return True
        except OutcomeUnknown as exc:  # sending_since stays: a resend looks first, if it can
            # Sending it again could double it; an admin sees it failed and can resend.
            await self._fail(row, f"outcome unknown, not repeated: {exc}")
            return True
        except DeliveryError as exc:
            if not isinstance(exc, MaybeSent):  # a refusal: this attempt sent nothing
                row.sending_since = maybe_sent
            return await self._backoff(row, str(exc))
        except Exception as exc:
            # translate: logged with its traceback, retried with backoff, then failed visibly.
            log.exception("adapter %s raised while sending %s", adapter.name, row.id)
            return await self._backoff(row, f"{type(exc).__name__}: {exc}")
        row.status = DeliveryStatus.SENT
        # The try that sent it counts too: `attempts` is the tries a delivery took (a failed
        # one's count, with which it gave up), never 0 for one sent. A try the platform
        # rate-limited is not counted: it waits for retry-after and uses no attempt up.
        row.attempts += 1
        row.sent_at = self._clock()
        row.error = None
        await self._save(row)
        for listener in self._sent_listeners:
            listener(row)
        return True

    async def _send_next(
        self, adapter: Adapter, row: Delivery, address: Address, maybe_sent: datetime | None
    ) -> list[str]:
        """Send the first unsent chunk, or as many as the adapter takes in one call."""
        first = len(row.message_ids)
        batch = adapter.capabilities.batch
        if batch > 1 and isinstance(adapter, BatchSender):
            last = min(len(row.chunks), first + batch)
            chunks = [self._chunk(row, address, i, maybe_sent) for i in range(first, last)]
            ids = await adapter.send_batch(chunks)
            if len(ids) != len(chunks):
                raise PermanentDeliveryError(f"{len(ids)} ids for {len(chunks)} chunks sent")
            return ids
        return [await adapter.send(self._chunk(row, address, first, maybe_sent))]

    def _chunk(
        self, row: Delivery, address: Address, index: int, maybe_sent: datetime | None = None
    ) -> OutboundChunk:
        return OutboundChunk(
            delivery_id=row.id,
            index=index,
            count=len(row.chunks),
            address=address,
            text=row.chunks[index],
            anima=row.anima,
            kind=row.kind,
            answers=row.answers,
            reply_to=row.reply_to,
            idempotency_key=f"{row.idempotency_key}:{index}",
            maybe_sent_since=maybe_sent if index == len(row.message_ids) else None,
        )

    async def _backoff(self, row: Delivery, error: str) -> bool:
        row.attempts += 1
        if row.attempts >= self._settings.max_attempts:
            await self._fail(row, f"gave up after {row.attempts} attempts: {error}")
            return True
        delay = min(
            self._settings.backoff_max_s, self._settings.backoff_base_s * 2 ** (row.attempts - 1)
        )
        await self._retry(row, delay * random.uniform(0.8, 1.2), error)
        return False

    async def _retry(self, row: Delivery, delay: float, error: str) -> None:
        row.next_attempt_at = self._clock() + timedelta(seconds=delay)
        row.error = error
        await self._save(row)
        self._told(row)
        log.warning("delivery %s to %s retrying in %.1fs: %s", row.id, row.address, delay, error)
        asyncio.get_running_loop().call_later(delay, self.wake)

    async def _fail(self, row: Delivery, error: str) -> None:
        row.status = DeliveryStatus.FAILED
        row.error = error
        log.error("delivery %s to %s failed: %s", row.id, row.address, error)
        audit = failure_audit(row, error, self._clock())
        await self._store(row, lambda conn: conn.execute(AUDIT, [audit]))
        self._told(row)

    async def _save(self, row: Delivery) -> None:
        """Write back what sending changes: progress, status, retry time, error."""
        await self._store(row)

    async def _store(self, row: Delivery, also: Callable[[Connection], object] = bool) -> None:
        """Record a delivery's progress, retried until the database takes it. The sender
        holds the row meanwhile and sends nothing more to its address: a chunk sent but not
        recorded would be sent again by the next sender."""
        values = progress(row)
        epoch = self._held.get(row.address)
        if epoch is None:
            raise ClaimLost(f"{row.address} is not held by this sender")
        while True:
            try:
                with self._db.write() as conn:
                    self._claims.renew(conn, row.address, epoch, self._clock())
                    if not conn.execute(SAVE, values).rowcount:
                        raise Gone(f"delivery {row.id} is no longer pending")
                    also(conn)
            except DBAPIError as exc:
                failures = self._senders.failing(f"the database refused a write: {exc.orig}")
                delay = self._backoff_db.delay(failures)
                log.error(
                    "cannot record delivery %s (%s); retrying in %.1f s", row.id, exc.orig, delay
                )
                await asyncio.sleep(delay)
                continue
            self._senders.ok()
            return

    def retry(self, delivery_id: str, actor: str, where: str) -> Delivery:
        """An admin's: a failed delivery goes back to pending, due now, and is sent."""
        row = reopen(self._db, delivery_id, Action(actor, where, self._clock()))
        self._told(row)
        self.wake()
        return row

    def cancel(self, delivery_id: str, actor: str, where: str) -> Delivery:
        """An admin's: a pending or failed delivery is never sent. One a sender (of any
        worker) is in the middle of is refused: a chunk may be out. A sender that read it
        before the cancel finds it no longer pending at its next write, and skips it."""
        row, _was = cancel(self._db, delivery_id, Action(actor, where, self._clock()))
        self._told(row)
        return row

    def _told(self, row: Delivery, error: str | None = None) -> None:
        """A delivery's change on the live feed (for admins: the outbox is theirs)."""
        self._live.publish(
            "delivery",
            (),
            id=row.id,
            anima=row.anima,
            status=row.status.value,
            address=row.address,
            error=error if error is not None else row.error,
        )

    def pending(self, address: Address, besides: str | None = None) -> bool:
        """Whether a delivery to `address` is still to be sent (or being sent), other than
        those answering the inbox row `besides`."""
        with self._db.engine.connect() as conn:
            found = conn.execute(PENDING_AT, {"where": str(address), "own": besides or ""}).first()
        return found is not None

    def counts(self) -> dict[str, int]:
        with self._db.session() as session:
            rows = session.exec(
                select(DeliveryRow.status, func.count()).group_by(col(DeliveryRow.status))
            ).all()
        return {status: int(n) for status, n in rows}

    def listing(self, status: str | None, limit: int) -> list[DeliveryRow]:
        with self._db.session() as session:
            query = select(DeliveryRow).order_by(col(DeliveryRow.created_at).desc()).limit(limit)
            if status:
                query = query.where(DeliveryRow.status == status)
            return list(session.exec(query).all())

    async def close(self) -> None:
        tasks = list(self._busy.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
