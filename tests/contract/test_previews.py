"""Streamed previews (adapters/streaming.py, adapters/previews.py) on every platform that posts
them, with the real SDK against the fake: a preview survives an adapter restart and the
reply, also when it is sent again, edits it; a preview whose post was carried out but never
answered (the window a kill can fall in) is found again, also after a restart, and edited;
no preview overtakes an earlier reply still due at the same address; and after a 429
nothing at all goes to the channel before its retry-after ran out.
"""

from __future__ import annotations

import time

import pytest
from sqlalchemy import update
from sqlmodel import col

from animahub_kit.contract.cases import delivery, reply_to, settled_row
from animahub_kit.contract.harness import PAUSED_PIECES, Harness, Posted, Sent, eventually
from animahub_kit.contract.platforms import BUILTIN
from animahub_kit.fakes.faults import Attempt, Fault, RateLimit, Recorder
from hub.adapter import discover
from hub.app import Hub
from hub.store.models import DeliveryRow

pytestmark = pytest.mark.needs("streaming")
CONTRACT_PLATFORMS = BUILTIN
FINAL = "".join(PAUSED_PIECES)


class RefuseFirst:
    """A fault policy: the first `times` sends answered 429 with `retry_after`, the rest
    carried out; every attempt recorded with its time (animahub_kit/fakes/faults.py)."""

    def __init__(self, times: int, retry_after: float) -> None:
        self.left = times
        self.retry_after = retry_after
        self.recorder = Recorder()

    def decide(
        self,
        platform: str,
        channel: str,
        method: str,
        *,
        whole_seconds: bool = False,
        names_wait: bool = True,
        scope: str = "",
    ) -> Fault | None:
        refuse = self.left > 0
        self.left -= refuse
        attempt = Attempt(
            time.monotonic(),
            platform,
            channel,
            method,
            "429" if refuse else "ok",
            self.retry_after if refuse else None,
            scope,
        )
        self.recorder.record(attempt)
        return RateLimit(self.retry_after) if refuse else None


async def restart_adapter(h: Harness) -> None:
    """A new instance of the platform's adapter on the same hub, as after a kill: all it
    knows of earlier previews is what the hub stored."""
    await h.hub.adapters[h.platform].stop()
    plugin = discover([h.platform])[h.platform]
    adapter = plugin.build(h.hub.settings.platform(h.platform, plugin.settings))
    await adapter.start(h.hub.port)
    h.hub.adapters[h.platform] = adapter  # the outbox sends through it from now on


def due_again(hub: Hub, delivery_id: str, **values: object) -> None:
    """The delivery back to `pending` (with `values`), as a kill before the outbox recorded
    its outcome leaves it; the caller wakes the outbox once the adapter is as it wants."""
    with hub.db.write() as conn:
        conn.execute(
            update(DeliveryRow)
            .where(col(DeliveryRow.id) == delivery_id)
            .values(status="pending", **values)
        )


def partial_posts(h: Harness) -> list[Posted]:
    return [p for p in h.posted() if p.text.startswith("Partial")]


async def reply_delivery(h: Harness, sent: Sent) -> DeliveryRow:
    def sent_row() -> DeliveryRow | None:
        rows = [d for d in h.hub.outbox.listing(None, 100) if d.answers == sent.event_id]
        return rows[0] if rows and rows[0].status == "sent" else None

    row: DeliveryRow = await eventually(sent_row)
    return row


async def test_a_preview_survives_a_restart_and_the_reply_edits_it_also_when_resent(
    harness: Harness,
) -> None:
    sent = await harness.say("alice", "general", "PAUSE a moment", mention=True)
    preview: Posted = await eventually(lambda: next(iter(partial_posts(harness)), None))
    assert preview.text.endswith("…")
    await restart_adapter(harness)  # killed before the reply came: the preview is left
    harness.responder.resume.set()
    await reply_to(harness, FINAL)
    row = await reply_delivery(harness, sent)
    assert [p.id for p in partial_posts(harness)] == [preview.id]  # edited, none beside it
    assert [p.text for p in partial_posts(harness)] == [FINAL]
    assert row.message_ids == [preview.id]

    # Killed after the edit, before the outbox recorded it: the delivery is due again. Due
    # only once the new adapter is in: the outbox also polls, and must not send meanwhile.
    await restart_adapter(harness)
    due_again(harness.hub, row.id, message_ids=[], sent_at=None)
    harness.hub.outbox.wake()
    resent = await eventually(lambda: (d := delivery(harness, row.id)).status == "sent" and d)
    assert resent.message_ids == [preview.id]  # the same message, edited again
    assert [p.text for p in partial_posts(harness)] == [FINAL]  # still one message


async def test_a_preview_whose_post_was_never_answered_is_found_and_edited_after_a_restart(
    harness: Harness,
) -> None:
    harness.drop_next_send_response()  # the preview's post: carried out, its answer lost
    sent = await harness.say("alice", "general", "PAUSE a moment", mention=True)
    lost: Posted = await eventually(lambda: next(iter(partial_posts(harness)), None))
    await restart_adapter(harness)  # all the hub knows of that preview: it was intended
    harness.responder.resume.set()
    await reply_to(harness, FINAL)
    row = await reply_delivery(harness, sent)
    assert [p.text for p in partial_posts(harness)] == [FINAL]  # found and edited: one message
    assert row.message_ids == [lost.id]


async def test_no_preview_overtakes_an_earlier_reply_that_waits_at_the_address(
    harness: Harness,
) -> None:
    harness.rate_limit_posts(2, retry_after=1.5)  # the first reply waits in the outbox
    first = await harness.dm("alice", "first question")
    second = await harness.dm("alice", "STREAM second")
    await settled_row(harness, second)
    final = "Thinking about it: the answer is 42."
    await reply_to(harness, final)
    await reply_to(harness, "echo: first question")
    in_dm = [p.text for p in harness.posted() if p.channel == first.channel]
    assert in_dm == ["echo: first question", final]  # in order, each once, no preview left


async def test_after_a_429_nothing_goes_to_the_channel_before_its_retry_after(
    harness: Harness,
) -> None:
    policy = RefuseFirst(2, retry_after=1.0)  # the first two sends, whichever they are
    harness.set_faults(policy)
    await harness.say("alice", "general", "STREAM through it", mention=True)
    await reply_to(harness, "Thinking about it: the answer is 42.")
    await harness.say("bob", "general", "and after it", mention=True)
    await reply_to(harness, "echo: and after it")
    recorder = policy.recorder
    assert recorder.count("429") == 2
    early = [(e.next.method, round(e.early_by, 3)) for e in recorder.early_retries()]
    assert early == []
    texts = [p.text for p in harness.posted()]
    assert texts.count("Thinking about it: the answer is 42.") == 1
    assert not [t for t in texts if t.endswith("…")]
