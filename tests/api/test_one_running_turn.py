"""At most one running turn per Anima and conversation, held by the database (the partial
unique index of migration 0019; docs/scale.md): a message arriving while another worker
runs a turn of its conversation waits behind it, and is answered once that one ends."""

from __future__ import annotations

import asyncio
import logging
import uuid

import httpx
import pytest
from sqlalchemy import insert, update
from sqlmodel import col, select

from hub.app import Hub
from hub.store.models import InboxItem, InboxStatus
from tests.api.test_chat_api import chat, sse_events
from tests.api.test_model_retry import eventually


def rows(hub: Hub) -> list[InboxItem]:
    with hub.db.session() as session:
        return list(session.exec(select(InboxItem).order_by(col(InboxItem.received_at))).all())


async def test_a_message_waits_behind_a_turn_running_elsewhere(
    client: httpx.AsyncClient, hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    first = await chat(client, "aria", message="Hello there")
    assert sse_events(first.text)[-1] == {"type": "done"}
    (answered,) = rows(hub)
    # Another worker's turn in the same conversation, running now.
    running = {
        **answered.model_dump(),
        "id": str(uuid.uuid4()),
        "event_id": str(uuid.uuid4()),
        "status": InboxStatus.PROCESSING,
    }
    with hub.db.write() as conn:
        conn.execute(insert(InboxItem), [running])

    caplog.set_level(logging.DEBUG, logger="hub.turns.runtime")
    second = asyncio.create_task(chat(client, "aria", message="And one more thing"))
    await eventually(lambda: "a turn of its conversation is running" in caplog.text, 30.0)
    waiting = [r for r in rows(hub) if r.text == "And one more thing"]
    assert [r.status for r in waiting] == [InboxStatus.RECEIVED]  # kept, not refused
    assert not second.done()

    with hub.db.write() as conn:  # the other worker's turn ends
        conn.execute(
            update(InboxItem)
            .where(col(InboxItem.id) == running["id"])
            .values(status=InboxStatus.DONE)
        )
    events = sse_events((await asyncio.wait_for(second, 60.0)).text)
    assert events[-1] == {"type": "done"}
    assert "one more thing" in "".join(e.get("text", "") for e in events)
    (done,) = [r for r in rows(hub) if r.text == "And one more thing"]
    assert done.status == InboxStatus.DONE
