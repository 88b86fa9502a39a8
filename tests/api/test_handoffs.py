"""Where you left off (hub/people/handoffs.py, docs/people.md): a DM session that ends leaves a
handoff for its person; it is offered once, in a DM on another platform at once or in the
same DM after the gap; never in a channel or to someone else, whom it is not used up by; it
expires, follows a link, goes with `/forget-me`, and the API lists it. Through
`Hub.receive`, the scheduler's tick and the API, with memory on and the offline rules."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from animahub_kit.contract.harness import eventually
from hub.app import Hub
from hub.clock import ManualClock
from hub.memory.distill import SessionTurn
from hub.memory.handoff import offline_handoff
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.store.models import DeliveryRow, InboxItem
from tests.api.test_forgetting import memory_hub
from tests.api.test_linking import code_in, command
from tests.api.test_people import ADMIN, web
from tests.conftest import started_hub

TG_DM = Address("telegram", "bot", "1001", kind=AddressKind.DM)
SLACK_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
CHANNEL = Address("slack", "T1", "C0GENERAL")
EVE_DM = Address("slack", "T1", "D0EVE", kind=AddressKind.DM)
DANA_TG = PlatformUser("telegram", "1001", "Dana")
DANA_SLACK = PlatformUser("slack", "U0DANA", "Dana")
EVE = PlatformUser("slack", "U0EVE", "Eve")
OFFERED = "Where we left off:"
_events = iter(range(1, 10_000))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
async def hub(home: Path, clock: ManualClock) -> AsyncIterator[Hub]:
    instance = await memory_hub(home, clock)
    try:
        yield instance
    finally:
        await instance.stop()


async def ask(hub: Hub, where: Address, who: PlatformUser, text: str) -> str:
    """`text` from `who` at `where`; the Anima's reply."""
    receipt = await hub.port.receive(
        Inbound(event_id=f"h-{next(_events)}", address=where, sender=who, text=text)
    )

    def reply() -> str | None:
        with hub.db.session() as session:
            row = session.get(InboxItem, receipt.inbox_id)
            sent = session.exec(
                select(DeliveryRow).where(DeliveryRow.inbox_id == receipt.inbox_id)
            ).first()
        return sent.text if row is not None and row.status == "done" and sent else None

    text_back: str = await eventually(reply)
    return text_back


async def session_ends(hub: Hub, clock: ManualClock, after: timedelta) -> None:
    """Time passes with nobody talking: the scheduler's tick closes idle sessions."""
    clock.advance(after)
    await hub.on_tick()


async def a_session_on_telegram(hub: Hub, clock: ManualClock) -> None:
    await ask(hub, TG_DM, DANA_TG, "Can you help me plan the Lisbon offsite?")
    await ask(hub, TG_DM, DANA_TG, "I'll book the venue tomorrow. Who should present the roadmap?")
    await session_ends(hub, clock, timedelta(minutes=11))


def dana(hub: Hub) -> str:
    """Dana's person id (made from no name: "dana" is only what Telegram calls her)."""
    return hub.identity.resolve(DANA_TG).id


async def linked(hub: Hub) -> None:
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    await command(hub, SLACK_DM, DANA_SLACK, f"/link {code}")


async def test_the_rules_keep_what_was_discussed_what_is_open_and_what_comes_next() -> None:
    at = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    note = offline_handoff(
        [
            SessionTurn("user", "Dana", "We need a venue for the offsite. Budget is 4k.", at),
            SessionTurn("assistant", "aria", "_(answered in offline mode)_", at),
            SessionTurn("user", "Dana", "Who presents the roadmap? I'll ask Kai on Friday.", at),
            SessionTurn("assistant", "aria", "Noted. Should I draft the agenda?", at),
        ]
    )
    assert note.discussed == "We need a venue for the offsite; Who presents the roadmap?"
    assert note.open_questions == ("Should I draft the agenda?",)  # Dana's: the topic already
    assert note.next_steps == ("We need a venue for the offsite.", "I'll ask Kai on Friday.")
    assert offline_handoff([SessionTurn("assistant", "aria", "Hello?", at)]).empty


async def test_a_handoff_is_offered_once_on_another_platform_and_listed(
    hub: Hub, clock: ManualClock
) -> None:
    await linked(hub)
    await a_session_on_telegram(hub, clock)
    async with web(hub) as client:
        listed = (await client.get(f"/api/people/{dana(hub)}/handoffs", headers=ADMIN)).json()
        assert [h["status"] for h in listed] == ["waiting"]
        assert "Lisbon offsite" in listed[0]["discussed"]
        assert listed[0]["where"] == "a direct conversation on telegram"
        assert listed[0]["next_steps"] == ["I'll book the venue tomorrow."]
        # Offline nothing was answered; the first question is what it was about already.
        assert listed[0]["open_questions"] == ["Who should present the roadmap?"]

        first = await ask(hub, SLACK_DM, DANA_SLACK, "Morning!")
        assert OFFERED in first and "Lisbon offsite" in first and "Want to pick that up?" in first
        again = await ask(hub, SLACK_DM, DANA_SLACK, "Another thing")
        assert OFFERED not in again  # once

        listed = (await client.get(f"/api/people/{dana(hub)}/handoffs", headers=ADMIN)).json()
        assert listed[0]["status"] == "offered" and listed[0]["offered_at"]


async def test_not_offered_in_a_channel_or_to_someone_else_and_not_used_up_by_them(
    hub: Hub, clock: ManualClock
) -> None:
    await linked(hub)
    await a_session_on_telegram(hub, clock)
    assert OFFERED not in await ask(hub, CHANNEL, DANA_SLACK, "<@aria> morning all")
    assert OFFERED not in await ask(hub, EVE_DM, EVE, "Where did we leave off?")
    assert "Lisbon" not in await ask(hub, EVE_DM, EVE, "What about the offsite?")
    assert OFFERED in await ask(hub, SLACK_DM, DANA_SLACK, "Hi")  # still hers to be offered


async def test_in_the_same_dm_it_is_offered_only_after_the_gap(
    hub: Hub, clock: ManualClock
) -> None:
    await a_session_on_telegram(hub, clock)
    assert OFFERED not in await ask(hub, TG_DM, DANA_TG, "One more thing")  # it is all there
    await session_ends(hub, clock, timedelta(hours=8))  # that second session's handoff
    back = await ask(hub, TG_DM, DANA_TG, "Back again")
    assert OFFERED in back and "One more thing" in back  # the newest one
    async with web(hub) as client:
        listed = (await client.get(f"/api/people/{dana(hub)}/handoffs", headers=ADMIN)).json()
    assert [h["status"] for h in listed] == ["offered", "superseded"]


async def test_a_handoff_expires_after_fourteen_days(hub: Hub, clock: ManualClock) -> None:
    await a_session_on_telegram(hub, clock)
    clock.advance(timedelta(days=14))
    assert OFFERED not in await ask(hub, TG_DM, DANA_TG, "Long time no see")
    async with web(hub) as client:
        assert (await client.get(f"/api/people/{dana(hub)}/handoffs", headers=ADMIN)).json() == []


async def test_one_person_sees_their_own_handoffs_and_forget_me_removes_them(
    hub: Hub, clock: ManualClock
) -> None:
    await a_session_on_telegram(hub, clock)
    async with web(hub) as client:
        person = dana(hub)  # by id: "Dana" is the name her Telegram account goes by
        made = await client.post("/api/tokens", json={"person": person}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        mine = await client.get("/api/me/handoffs", headers=own)
        assert mine.status_code == 200 and len(mine.json()) == 1
        assert (await client.get(f"/api/people/{person}/handoffs", headers=own)).status_code == 403
        gone = await client.post("/api/me/forget", headers=own)
        assert gone.json()["handoffs"] == 1
        assert (await client.get("/api/me/handoffs", headers=own)).json() == []


async def test_with_a_model_it_writes_the_handoff_and_is_told_to_offer_it(
    home: Path, clock: ManualClock, fake_openai: Any
) -> None:
    llm = {"model": "openai/fake", "api_base": f"{fake_openai.url}/v1", "api_key": "x"}
    hub = await started_hub(
        home,
        clock,
        hub={"default_anima": "aria"},
        memory={"enabled": True},
        llm={**llm, "workers": 0},
    )
    try:
        await linked(hub)
        fake_openai.queue_reply("Happy to. What dates?")
        await ask(hub, TG_DM, DANA_TG, "Can you help me plan the Lisbon offsite?")
        fake_openai.queue_reply(json.dumps({"summary": "Dana is planning the Lisbon offsite."}))
        fake_openai.queue_reply(
            json.dumps(
                {
                    "discussed": "Planning the Lisbon offsite in May.",
                    "open_questions": ["Which dates work for the team?"],
                    "next_steps": ["Dana books the venue."],
                }
            )
        )
        await session_ends(hub, clock, timedelta(minutes=11))
        asked = len(fake_openai.requests)
        assert any("handoff" in str(r["messages"][0]) for r in fake_openai.requests[:asked])

        fake_openai.queue_reply("Welcome back! Shall we pick up the offsite?")
        await ask(hub, SLACK_DM, DANA_SLACK, "Hi there")
        prompt = [m["content"] for m in fake_openai.requests[-1]["messages"]]
        handoff = [c for c in prompt if c.startswith("<handoff")]
        assert len(handoff) == 1
        assert "Planning the Lisbon offsite in May." in handoff[0]
        assert "Which dates work for the team?" in handoff[0]
        assert "do not assume they want to" in handoff[0]

        fake_openai.queue_reply("Sure.")
        await ask(hub, SLACK_DM, DANA_SLACK, "And another thing")
        assert not any(
            str(m["content"]).startswith("<handoff") for m in fake_openai.requests[-1]["messages"]
        )
    finally:
        await hub.stop()
