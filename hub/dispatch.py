"""From a persisted inbound to an Anima's mailbox: identity, then routing, then runtime."""

from __future__ import annotations

import logging

from hub.animas import AnimaRegistry
from hub.commands.parse import is_command_text
from hub.identity import IdentityService
from hub.inbox import Inbox
from hub.ingress import from_row
from hub.mailbox import TurnJob
from hub.messages import Inbound
from hub.routing import Router
from hub.runtime import Runtime
from hub.store.models import InboxItem, InboxStatus

log = logging.getLogger(__name__)
_INTERRUPTED_COMMAND = "the hub restarted before this command finished; send it again"


class Dispatcher:
    def __init__(
        self,
        inbox: Inbox,
        identity: IdentityService,
        router: Router,
        animas: AnimaRegistry,
        runtime: Runtime,
    ) -> None:
        self._inbox = inbox
        self._identity = identity
        self._router = router
        self._animas = animas
        self._runtime = runtime

    def dispatch(self, row: InboxItem, inbound: Inbound) -> str | None:
        """Route one new inbound; return the Anima it went to, or None."""
        if inbound.sender.is_bot:
            self._inbox.close_now(row, InboxStatus.IGNORED, "sent by a bot")
            return None
        if inbound.edit_of is not None:
            # An edit is kept (the inbox has the new text) but not answered again: fixing a
            # typo should not make an Anima reply twice.
            self._inbox.close_now(row, InboxStatus.IGNORED, f"an edit of {inbound.edit_of}")
            return None
        person = self._identity.resolve(inbound.sender)
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
        self._runtime.submit(TurnJob(row.id, anima, row.conversation, person.id))
        return anima

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
                self._runtime.submit(TurnJob(row.id, row.anima, row.conversation, row.person_id))
            else:
                self.dispatch(row, from_row(row))
        if rows:
            log.info("recovered %d unfinished inbound messages", len(rows))
        return len(rows)
