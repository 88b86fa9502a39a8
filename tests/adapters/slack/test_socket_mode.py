"""Socket Mode end to end: the real SDK's aiohttp Socket Mode client against the fake."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import select

from animahub_kit.contract.cases import answered_marker, replies_containing, reply_to
from animahub_kit.contract.slack_harness import APP_TOKEN, open_harness
from hub.store.models import InboxItem


async def test_an_event_envelope_is_acknowledged_by_its_id_and_answered(tmp_path: Path) -> None:
    async with open_harness(tmp_path, socket_mode=True) as h:
        fake = h.fake
        opened = fake.calls_of("apps.connections.open")
        assert [call.token for call in opened] == [APP_TOKEN]  # the app-level token
        assert fake.hellos == 1 and len(fake.sockets) == 1

        event = fake.message_event("U0ALICE", "D0ALICE", "hello over the socket")
        body = fake.callback(event)
        envelope = fake.push("events_api", body)
        assert await fake.ack(envelope) is None  # acknowledged at once, without a payload
        posted = await reply_to(h, "echo: hello over the socket")
        assert (posted.channel, posted.thread) == ("D0ALICE", None)

        again = fake.push("events_api", body, retry_attempt=1, retry_reason="timeout")
        assert await fake.ack(again) is None  # a redelivery is acknowledged the same way
        await answered_marker(h)
        assert len(replies_containing(h, "echo: hello over the socket")) == 1
        assert h.hub_url  # the HTTP server runs, but Slack's events come over the socket


async def test_a_slash_command_envelope_is_acknowledged_with_the_answer(tmp_path: Path) -> None:
    async with open_harness(tmp_path, socket_mode=True) as h:
        payload = h.fake.command_payload("U0BOB", "C0GENERAL", "/whoami", "")
        ack = await h.fake.ack(h.fake.push("slash_commands", payload))
        assert ack is not None
        assert ack["response_type"] == "ephemeral"
        assert ack["text"] and ack["text"] != "Working on it…"
        with h.hub.db.session() as session:
            row = session.exec(
                select(InboxItem).where(InboxItem.event_id == f"cmd:{payload['trigger_id']}")
            ).one()
        assert (row.text, row.sender_key, row.address_kind) == ("/whoami", "slack:U0BOB", "channel")
        assert h.fake.responses == []  # answered in the acknowledgement, not via response_url
