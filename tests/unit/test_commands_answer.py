"""CommandService.answer(), the inbox side of a command: each inbound command is run once and
its row closed; redeliveries, bots' commands and failures are answered without a rerun.
"""

from __future__ import annotations

from hub.inbound.ingress import Ingress
from hub.messages import Inbound, PlatformUser
from hub.store.db import Database
from hub.store.models import InboxItem
from tests.unit.commands_helpers import ROOT, Parts, audit, bindings, command, stored

BOT = PlatformUser("slack", "UBOT", "Bot", is_bot=True)


def accept(db: Database, inbound: Inbound) -> tuple[InboxItem, bool]:
    return Ingress(db, 32 * 1024).accept(inbound)


async def test_answer_runs_a_command_once_and_closes_its_row(parts: Parts) -> None:
    inbound = command("/anima bind aria", event_id="slack-cmd-1")
    row, duplicate = accept(parts.db, inbound)

    reply = await parts.service.answer(row, inbound, duplicate)

    assert reply == "This channel is now bound to aria: it answers messages here."
    done = stored(parts.db, row.id)
    assert (done.status, done.anima, done.error) == ("done", None, None)
    assert done.person_id == parts.identity.resolve(ROOT).id
    assert done.finished_at is not None
    again, duplicate = accept(parts.db, inbound)
    assert duplicate and again.id == row.id
    assert await parts.service.answer(again, inbound, duplicate) == (
        "Already done: this command was run when it first arrived."
    )
    assert len(audit(parts.db)) == 1


async def test_a_redelivery_of_a_command_still_running_is_not_run_again(parts: Parts) -> None:
    inbound = command("/anima pause aria", event_id="slow-1")
    accept(parts.db, inbound)
    again, duplicate = accept(parts.db, inbound)
    assert duplicate
    reply = await parts.service.answer(again, inbound, duplicate)
    assert reply == "Already received: this command is still being run."
    assert not parts.states.is_paused("aria")


async def test_commands_from_bots_are_not_run(parts: Parts) -> None:
    inbound = command("/anima bind aria", sender=BOT)
    row, duplicate = accept(parts.db, inbound)
    assert await parts.service.answer(row, inbound, duplicate) == (
        "Commands sent by bots are not run."
    )
    assert stored(parts.db, row.id).status == "ignored"
    assert bindings(parts.db) == {}


async def test_a_failing_heartbeat_is_reported_audited_and_the_row_failed(parts: Parts) -> None:
    parts.calls.fail_with = RuntimeError("scheduler is not running")
    inbound = command("/anima heartbeat aria")
    row, duplicate = accept(parts.db, inbound)

    reply = await parts.service.answer(row, inbound, duplicate)

    assert reply == (
        "Sorry, that command failed (scheduler is not running). The details are in the hub log."
    )
    failed = stored(parts.db, row.id)
    assert failed.status == "failed"
    assert failed.error is not None and "scheduler is not running" in failed.error
    entry = audit(parts.db)[-1]
    assert entry.action == "anima.heartbeat"
    assert "scheduler is not running" in entry.detail["error"]
    again, duplicate = accept(parts.db, inbound)
    assert "failed when it first arrived" in await parts.service.answer(again, inbound, duplicate)
    assert parts.calls.beats == ["aria"]  # not triggered a second time
