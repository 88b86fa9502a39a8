"""The dashboard's hub state over the real app (hub/api/dashboard_routes.py): Animas and
their schedule, pause and resume, conversations within a person's rights, the audit log, and
a person refused the admin calls. Retry and cancel: tests/api/test_delivery_control.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from animahub_kit.contract.harness import eventually
from hub.adapter import CallerKind, PlatformState
from hub.app import Hub
from hub.clock import ManualClock
from hub.schedule.spread import heartbeat_trigger, offsets
from hub.store.models import InboxItem, InboxStatus
from tests.api.dashboard_hub import (
    ADMIN,
    START,
    FakePlatform,
    audited,
    chat,
    open_hub,
    post,
    say_on_slack,
    token_for,
    web,
)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def platform() -> FakePlatform:
    return FakePlatform()


@pytest.fixture
async def hub(home: Path, clock: ManualClock, platform: FakePlatform) -> AsyncIterator[Hub]:
    async with open_hub(home, clock, platform) as instance:
        yield instance


@pytest.fixture
async def client(hub: Hub) -> AsyncIterator[httpx.AsyncClient]:
    async with web(hub) as http:
        yield http


# Animas -------------------------------------------------------------------------------


async def test_the_animas_their_tree_schedule_heartbeat_and_turns_today(
    hub: Hub, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    crons = hub.animas.get("aria").path / "crons"  # type: ignore[union-attr]
    crons.mkdir(exist_ok=True)
    (crons / "digest.md").write_text("## Morning digest\nschedule: 0 8 * * *\ntype: llm\nSum up.\n")
    hub.scheduler.open()
    await hub.on_tick()  # plans every Anima's heartbeat and aria's cron
    dana = await token_for(client, "dana")
    await chat(client, dana, "Hello aria", "s1")
    beat = await client.post("/api/animas/aria/heartbeat", headers=ADMIN)
    assert beat.status_code == 200

    shown = await client.get("/api/dashboard/animas", headers=dana)  # a person may look
    assert shown.status_code == 200, shown.text
    body = shown.json()
    animas = {a["name"]: a for a in body["animas"]}
    assert set(animas) == {"mika", "aria", "kai"}
    aria, mika = animas["aria"], animas["mika"]
    assert mika["subordinates"] == ["aria", "kai"] and aria["subordinates"] == []
    assert aria["supervisor"] == "mika" and aria["role"] == "researcher" and aria["title"]
    assert aria["paused"] is False and aria["state"] == "running"
    assert aria["platforms_down"] == []
    # each platform as health has it: state, reason, since, next_retry_at, failures
    assert {name: (p["state"], p["reason"]) for name, p in body["platforms"].items()} == {
        "web": ("up", ""),
        "fake": ("up", ""),
    }
    assert aria["turns_today"] == 1 and mika["turns_today"] == 0
    assert aria["skipped_runs"] == {"count": 0, "last_at": None}
    assert aria["last_heartbeat"] == START.isoformat()
    assert aria["last_heartbeat_outcome"] == beat.json()["outcome"].removeprefix("aria: ")
    assert mika["last_heartbeat"] is None and mika["last_heartbeat_outcome"] is None
    # Within the half hour, at aria's own phase of it among the Animas (hub/schedule/spread.py).
    every = [a.name for a in hub.animas.all() if a.spec.heartbeat.interval_minutes == 30]
    phase = offsets(every, timedelta(minutes=30))["aria"]
    beat = heartbeat_trigger(phase, 30, "UTC").get_next_fire_time(None, START)
    assert START < beat <= START + timedelta(minutes=30)
    shown = beat.replace(microsecond=0).isoformat()  # the API shows whole seconds
    assert aria["next_heartbeat"] == shown
    assert [r["kind"] for r in aria["next_runs"]] == ["heartbeat", "cron"]
    assert aria["next_runs"][0] == {
        "key": "heartbeat:aria",
        "kind": "heartbeat",
        "at": shown,
    }
    # A person sees when aria's cron runs, not its file or title (crons are the admins').
    assert aria["next_runs"][1]["key"] == "cron:aria"
    assert aria["next_runs"][1]["at"] == (START + timedelta(hours=23)).isoformat()
    assert [r["key"] for r in mika["next_runs"]] == ["heartbeat:mika"]

    admin = {
        a["name"]: a
        for a in (await client.get("/api/dashboard/animas", headers=ADMIN)).json()["animas"]
    }
    assert admin["aria"]["next_runs"][1]["key"] == "cron:aria:digest.md:morning-digest"

    clock.advance(timedelta(days=1))  # a new day: nothing answered yet
    again = (await client.get("/api/dashboard/animas", headers=ADMIN)).json()
    assert {a["name"]: a["turns_today"] for a in again["animas"]}["aria"] == 0


async def test_heartbeats_missed_while_the_hub_was_down_show_as_skipped(
    hub: Hub, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    hub.scheduler.open()
    await hub.on_tick()
    clock.advance(timedelta(hours=3))  # down: six of aria's half-hourly slots pass
    await hub.scheduler.run_due()  # one run, for the latest; five stood in for
    shown = await client.get("/api/dashboard/animas", headers=ADMIN)
    aria = {a["name"]: a for a in shown.json()["animas"]}["aria"]
    assert aria["skipped_runs"]["count"] == 5
    last = datetime.fromisoformat(aria["skipped_runs"]["last_at"])
    assert START + timedelta(hours=2, minutes=30) < last <= clock.now()


async def test_a_platform_down_shows_on_every_running_anima(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    hub.platforms.report("fake", PlatformState.DOWN, "unreachable")
    await client.post("/api/animas/kai/pause", headers=ADMIN)
    body = (await client.get("/api/dashboard/animas", headers=ADMIN)).json()
    states = {a["name"]: (a["state"], a["platforms_down"]) for a in body["animas"]}
    assert states == {
        "mika": ("platform down", ["fake"]),
        "aria": ("platform down", ["fake"]),
        "kai": ("paused", ["fake"]),
    }
    fake = body["platforms"]["fake"]  # the page says why, since when, what is next
    assert fake.pop("since") is not None
    assert fake == {"state": "down", "reason": "unreachable", "next_retry_at": None, "failures": 1}


async def test_pause_and_resume_hold_and_answer_as_the_command_does(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    dana = await token_for(client, "dana")
    paused = await client.post("/api/animas/aria/pause", headers=ADMIN)
    assert paused.status_code == 200, paused.text
    assert paused.json()["name"] == "aria" and paused.json()["paused"] is True
    assert hub.anima_states.is_paused("aria")
    again = await client.post("/api/animas/aria/pause", headers=ADMIN)
    assert again.status_code == 200 and again.json()["paused"] is True
    # Held, as `/anima pause` holds: the message waits, its sender is told.
    response = await client.post(
        "/api/chat/aria", json={"message": "anyone there?", "conversation_id": "s1"}, headers=dana
    )
    assert "paused" in response.text
    with hub.db.session() as session:
        held = session.exec(select(InboxItem).where(InboxItem.anima == "aria")).one()
    assert held.status == InboxStatus.HELD

    resumed = await client.post("/api/animas/aria/resume", headers=ADMIN)
    assert resumed.status_code == 200 and resumed.json()["paused"] is False

    def answered() -> bool:
        with hub.db.session() as session:
            row = session.get(InboxItem, held.id)
        return row is not None and row.status == InboxStatus.DONE

    await eventually(answered)
    owner = hub.identity.owner().id
    pauses = [(e.actor, e.where, e.target, e.detail) for e in audited(hub, "anima.pause")]
    assert pauses == [
        (
            f"{CallerKind.ADMIN_TOKEN.value}:{owner}",
            "api",
            "aria",
            {"person": owner, "changed": True},
        ),
        (
            f"{CallerKind.ADMIN_TOKEN.value}:{owner}",
            "api",
            "aria",
            {"person": owner, "changed": False},
        ),
    ]
    [resume] = audited(hub, "anima.resume")
    assert resume.detail == {"person": owner, "changed": True, "released": 1}
    assert (await client.post("/api/animas/nobody/pause", headers=ADMIN)).status_code == 404


async def test_a_person_is_refused_the_admin_calls(hub: Hub, client: httpx.AsyncClient) -> None:
    dana = await token_for(client, "dana")
    platform_failure = post(hub, "x")
    for method, path in (
        ("POST", "/api/animas/aria/pause"),
        ("POST", "/api/animas/aria/resume"),
        ("GET", "/api/audit"),
        ("POST", f"/api/deliveries/{platform_failure}/retry"),
        ("POST", f"/api/deliveries/{platform_failure}/cancel"),
    ):
        response = await client.request(method, path, headers=dana)
        assert response.status_code == 403, (path, response.text)
    assert not hub.anima_states.is_paused("aria")
    assert not audited(hub, "delivery.cancel") and not audited(hub, "anima.pause")


# Conversations ------------------------------------------------------------------------


def _id(hub: Hub, name: str) -> str:
    person = hub.identity.find(name)
    assert person is not None
    return person.id


async def test_conversations_on_every_platform_and_a_persons_own(
    hub: Hub, client: httpx.AsyncClient, clock: ManualClock
) -> None:
    dana, bob, eve = [await token_for(client, n) for n in ("dana", "bob", "eve")]
    # Their ids, in the web chat's addresses: opaque, made from no name.
    d, b, e = [_id(hub, n) for n in ("dana", "bob", "eve")]
    await chat(client, dana, "Where is the pineapple report?", "s1")
    clock.advance(timedelta(minutes=1))
    await chat(client, bob, "Hello kai", "s2", anima="kai")
    clock.advance(timedelta(minutes=1))
    await say_on_slack(hub, "U1", "Carol", "what is new?", channel="general")
    clock.advance(timedelta(minutes=1))
    await chat(client, eve, "I am Dana on my laptop", "s3")
    clock.advance(timedelta(minutes=1))
    merged = await client.post(f"/api/people/{e}/merge", json={"into": d}, headers=ADMIN)
    assert merged.status_code == 200, merged.text

    listed = await client.get("/api/conversations", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    everything = listed.json()["conversations"]
    assert [c["key"] for c in everything] == [
        f"web:local/dm:aria:{e}#s3",
        "slack:T1/general",
        f"web:local/dm:kai:{b}#s2",
        f"web:local/dm:aria:{d}#s1",
    ]
    first = everything[-1]
    assert {k: v for k, v in first.items() if k not in ("last_at", "last_text")} == {
        "key": f"web:local/dm:aria:{d}#s1",
        "platform": "web",
        "kind": "dm",
        "place": "DM with dana on web",
        "anima": "aria",
        "people": ["dana"],
        "turns": 2,
    }
    assert first["last_at"] == START.isoformat() and 0 < len(first["last_text"]) <= 140
    slack = everything[1]
    assert (slack["kind"], slack["place"], slack["people"]) == (
        "channel",
        "#general on slack",
        ["Carol"],
    )
    # eve is dana now: her conversation is dana's, under dana's name.
    assert everything[0]["people"] == ["dana"]

    async def keys(who: dict[str, str], **filters: str) -> list[str]:
        response = await client.get("/api/conversations", params=filters, headers=who)
        assert response.status_code == 200, response.text
        return [c["key"] for c in response.json()["conversations"]]

    mine = [f"web:local/dm:aria:{e}#s3", f"web:local/dm:aria:{d}#s1"]
    assert await keys(dana) == mine
    assert await keys(bob) == [f"web:local/dm:kai:{b}#s2"]
    assert await keys(dana, anima="kai") == []  # a filter never widens a person's view
    assert await keys(dana, person="bob") == []
    assert await keys(ADMIN, q="PINEAPPLE") == [f"web:local/dm:aria:{d}#s1"]
    assert await keys(ADMIN, platform="slack") == ["slack:T1/general"]
    assert await keys(ADMIN, channel="#general") == ["slack:T1/general"]
    assert await keys(ADMIN, anima="kai") == [f"web:local/dm:kai:{b}#s2"]
    assert await keys(ADMIN, person="dana") == mine
    assert await keys(ADMIN, person="nobody") == []
    assert len(await keys(ADMIN, limit="2")) == 2

    own = await client.get("/api/conversation", params={"key": mine[1]}, headers=dana)
    assert own.status_code == 200, own.text
    assert own.json()["key"] == mine[1] and own.json()["place"] == "DM with dana on web"
    turns = own.json()["turns"]
    assert [(t["role"], t["author"], t["anima"]) for t in turns] == [
        ("user", "dana", "aria"),
        ("assistant", "aria", "aria"),
    ]
    assert turns[0]["text"] == "Where is the pineapple report?"
    assert turns[0]["at"] == START.isoformat()
    for key in (f"web:local/dm:kai:{b}#s2", "slack:T1/general", "web:local/dm:aria:nobody#x"):
        refused = await client.get("/api/conversation", params={"key": key}, headers=dana)
        assert refused.status_code == 404, key
    assert (
        await client.get("/api/conversation", params={"key": "slack:T1/general"}, headers=ADMIN)
    ).json()["turns"][0]["text"] == "@aria what is new?"


async def test_a_conversations_excerpt_is_the_last_thing_said_not_the_offline_note(
    client: httpx.AsyncClient,
) -> None:
    """In offline mode the answer's turn holds only `_(answered in offline mode)_`: the
    list shows what the person said last instead of that note on every DM."""
    dana = await token_for(client, "dana")
    await chat(client, dana, "First question", "s1")
    await chat(client, dana, "Where is the pineapple report?", "s1")

    listed = (await client.get("/api/conversations", headers=ADMIN)).json()["conversations"]
    assert [(c["last_text"], c["turns"]) for c in listed] == [("Where is the pineapple report?", 4)]
    turns = (
        await client.get("/api/conversation", params={"key": listed[0]["key"]}, headers=ADMIN)
    ).json()["turns"]
    assert turns[-1]["text"] == "_(answered in offline mode)_"  # the transcript keeps it


# Audit -----------------------------------------------------------------


async def test_the_audit_log_latest_first_and_by_action(
    hub: Hub, client: httpx.AsyncClient
) -> None:
    await client.post("/api/animas/aria/pause", headers=ADMIN)
    await client.post("/api/animas/aria/resume", headers=ADMIN)
    await client.post("/api/tokens", json={"person": "dana"}, headers=ADMIN)
    entries = (await client.get("/api/audit", headers=ADMIN)).json()["entries"]
    assert [e["action"] for e in entries] == ["token.create", "anima.resume", "anima.pause"]
    owner = hub.identity.owner().id
    assert datetime.fromisoformat(entries[2].pop("at")).tzinfo is not None
    assert entries[2] == {
        "actor": f"{CallerKind.ADMIN_TOKEN.value}:{owner}",
        "where": "api",
        "action": "anima.pause",
        "target": "aria",
        "detail": {"person": owner, "changed": True},
    }
    family = (await client.get("/api/audit", params={"action": "anima"}, headers=ADMIN)).json()
    assert [e["action"] for e in family["entries"]] == ["anima.resume", "anima.pause"]
    one = await client.get(
        "/api/audit", params={"action": "anima.pause", "limit": 5}, headers=ADMIN
    )
    assert [e["action"] for e in one.json()["entries"]] == ["anima.pause"]
    latest = await client.get("/api/audit", params={"limit": 1}, headers=ADMIN)
    assert [e["action"] for e in latest.json()["entries"]] == ["token.create"]
