"""From a persisted inbound to an Anima's mailbox: identity, then routing, then runtime."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.exc import DBAPIError

from hub.animas import AnimaRegistry
from hub.inbound.ingress import from_row
from hub.inbound.pacing import Pacing
from hub.inbound.routing import Router
from hub.messages import Inbound
from hub.people.admission import Admission
from hub.people.identity import IdentityService
from hub.slash import is_command_text
from hub.store.models import InboxItem, InboxStatus
from hub.supervise import Backoff, Part
from hub.turns.inbox import OPEN, Inbox
from hub.turns.mailbox import TurnJob
from hub.turns.runtime import Runtime

log = logging.getLogger(__name__)
_INTERRUPTED_COMMAND = "the hub restarted before this command finished; send it again"


class Dispatcher:
    def __init__(
        self,
        *,
        inbox: Inbox,
        identity: IdentityService,
        router: Router,
        animas: AnimaRegistry,
        runtime: Runtime,
        health: Part | None = None,
        pacing: Pacing | None = None,
        admission: Admission | None = None,
    ) -> None:
        self._admission = admission
        self._inbox = inbox
        self._identity = identity
        self._router = router
        self._animas = animas
        self._runtime = runtime
        self._health = health or Part("turns")
        self._backoff = Backoff(base_s=1.0, max_s=30.0)
        self._pacing = pacing

    def dispatch(self, row: InboxItem, inbound: Inbound) -> str | None:
        """Route one new inbound; return the Anima it went to, or None. The row is already
        stored, so if the database fails now routing is tried again later: a redelivery
        would be taken for a duplicate and never routed."""
        try:
            return self._route(row, inbound)
        except DBAPIError as exc:
            failures = self._health.failing(f"the database failed routing: {exc.orig}")
            delay = self._backoff.delay(failures)
            log.error("routing %s failed (%s); trying again in %.1f s", row.id, exc.orig, delay)
            asyncio.get_running_loop().call_later(delay, self._again, row.id)
            return None

    def _again(self, inbox_id: str) -> None:
        try:
            row = self._inbox.get(inbox_id)
        except DBAPIError as exc:
            delay = self._backoff.delay(self._health.failing(f"the database: {exc.orig}"))
            asyncio.get_running_loop().call_later(delay, self._again, inbox_id)
            return
        if row is not None and row.status in OPEN and not row.anima:
            self.dispatch(row, from_row(row))

    def _route(self, row: InboxItem, inbound: Inbound) -> str | None:
        if inbound.sender.is_bot:
            self._inbox.close_now(row, InboxStatus.IGNORED, "sent by a bot")
            return None
        if inbound.edit_of is not None:
            # An edit is kept (the inbox has the new text) but not answered again: fixing a
            # typo should not make an Anima reply twice.
            self._inbox.close_now(row, InboxStatus.IGNORED, f"an edit of {inbound.edit_of}")
            return None
        person = self._identity.resolve(inbound.sender)
        if self._admission is not None and not self._admission.admits(inbound, person):
            reason = f"{person.id} is not let in to DMs on {inbound.address.platform} yet"
            self._inbox.close_now(row, InboxStatus.IGNORED, reason, person_id=person.id)
            return None
        anima = self._router.route(inbound, person, self._animas.names())
        if anima is None and not inbound.addressed:
            self._inbox.close_now(
                row, InboxStatus.IGNORED, "not addressed to an Anima", person_id=person.id
            )
            return None
        if anima is None:
            self._inbox.close_now(
                row,
                InboxStatus.UNROUTED,
                "no Anima to answer: none configured",
                person_id=person.id,
            )
            log.warning("inbound %s from %s: no Anima to route to", row.id, inbound.sender.key)
            return None
        # The runtime records the Anima and person on the row when the turn starts, in the
        # same write that marks it processing; until then recovery simply routes it again.
        self._submit(row, TurnJob(row.id, anima, row.conversation, person.id))
        return anima

    def _submit(self, row: InboxItem, job: TurnJob) -> None:
        self._runtime.expect(job.inbox_id)
        if self._pacing is None:
            self._runtime.submit(job)
        else:
            self._pacing.submit(row, job)

    def recover(self) -> int:
        """Resubmit every inbound a previous run accepted but did not finish."""
        rows = self._inbox.unfinished()
        for row in rows:
            if not row.anima and is_command_text(row.text):
                # A command interrupted by the restart: its platform is no longer waiting
                # for the answer, so it is not run unseen; the person sends it again.
                self._inbox.close_now(
                    row, InboxStatus.FAILED, _INTERRUPTED_COMMAND, person_id=row.person_id
                )
                log.warning("command %s was interrupted by a restart; not run", row.id)
            elif row.anima:
                self._submit(row, TurnJob(row.id, row.anima, row.conversation, row.person_id))
            else:
                self.dispatch(row, from_row(row))
        if rows:
            log.info("recovered %d unfinished inbound messages", len(rows))
        return len(rows)
