"""One person across platforms (hub/people/linking.py, docs/people.md): `/link` codes, what a link
merges, `/unlink`, the admin's people API, and DM memory that follows the person and no one
else. Commands go in through `Hub.receive`, as every adapter hands them over."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import select

from hub.app import Hub
from hub.clock import ManualClock
from hub.memory.recall import RecallScope
from hub.memory.service import TurnRecord
from hub.messages import Address, AddressKind, Command, Inbound, PlatformUser
from hub.people.linking import ALPHABET, CODE_LENGTH
from hub.store.models import AuditEntry, DeliveryRow
from tests.api.test_people import ADMIN, TOKEN, _started, web
from tests.conftest import started_hub

SLACK_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
TG_DM = Address("telegram", "bot", "1001", kind=AddressKind.DM)
TG_GROUP = Address("telegram", "bot", "-5", kind=AddressKind.GROUP)
DANA_SLACK = PlatformUser("slack", "U0DANA", "Dana")
DANA_TG = PlatformUser("telegram", "1001", "Dana")
EVE_TG = PlatformUser("telegram", "2002", "Eve")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
async def hub(home: Path, clock: ManualClock) -> AsyncIterator[Hub]:
    instance = await _started(home, clock, api_token=TOKEN)
    try:
        yield instance
    finally:
        await instance.stop()


_events = iter(range(1, 10_000))


async def command(hub: Hub, where: Address, who: PlatformUser, text: str) -> str:
    name, *args = text.lstrip("/").split()
    receipt = await hub.port.receive(
        Inbound(
            event_id=f"ev-{next(_events)}",
            address=where,
            sender=who,
            text=text,
            command=Command(name, tuple(args)),
        )
    )
    assert receipt.reply is not None
    return receipt.reply


def code_in(reply: str) -> str:
    code = reply.split("code: ", 1)[1].split()[0]
    assert len(code) == CODE_LENGTH and set(code) <= set(ALPHABET), code
    return code


async def test_a_code_from_a_dm_links_another_platform_and_both_sides_are_told(hub: Hub) -> None:
    slack_person = hub.identity.resolve(DANA_SLACK)
    tg_person = hub.identity.resolve(DANA_TG)
    assert slack_person.id != tg_person.id  # two people until they link
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    answer = await command(hub, SLACK_DM, DANA_SLACK, f"/link {code.lower()}")
    assert answer.startswith("Linked: you are Dana on slack, telegram")
    assert hub.identity.resolve(DANA_SLACK).id == hub.identity.resolve(DANA_TG).id == tg_person.id
    with hub.db.session() as session:
        told = session.exec(select(DeliveryRow).where(DeliveryRow.address == str(TG_DM))).all()
        audit = session.exec(select(AuditEntry).where(AuditEntry.action == "person.merged")).all()
    assert [d.text for d in told if d.text.startswith("Linked:")]  # the other side
    assert [(a.target, a.detail["from"], a.detail["via"]) for a in audit] == [
        (tg_person.id, slack_person.id, "/link")
    ]
    assert not hub.identity.profile_path(slack_person.id).exists()  # folded into Dana's
    profile = hub.identity.profile_path(tg_person.id).read_text()
    assert "slack:U0DANA" in profile and "telegram:1001" in profile


async def test_a_code_works_once_and_only_for_ten_minutes(hub: Hub, clock: ManualClock) -> None:
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    assert "Linked" in await command(hub, SLACK_DM, DANA_SLACK, f"/link {code}")
    eve_dm = Address("telegram", "bot", "2002", kind=AddressKind.DM)
    again = await command(hub, eve_dm, EVE_TG, f"/link {code}")
    assert again.startswith("That code is not valid")
    late = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    clock.advance(timedelta(minutes=10, seconds=1))
    assert (await command(hub, eve_dm, EVE_TG, f"/link {late}")).startswith("That code is not")
    assert hub.identity.resolve(EVE_TG).id != hub.identity.resolve(DANA_TG).id


async def test_codes_are_given_only_in_a_dm_and_at_most_three_wait(hub: Hub) -> None:
    refused = await command(hub, TG_GROUP, DANA_TG, "/link")
    assert "direct message" in refused and "code:" not in refused
    codes = [code_in(await command(hub, TG_DM, DANA_TG, "/link")) for _ in range(4)]
    eve_dm = Address("telegram", "bot", "2002", kind=AddressKind.DM)
    first = await command(hub, eve_dm, EVE_TG, f"/link {codes[0]}")
    assert first.startswith("That code is not valid")  # the oldest of four went
    assert "Linked" in await command(hub, SLACK_DM, DANA_SLACK, f"/link {codes[3]}")


async def test_a_code_of_ones_own_and_a_malformed_one_are_refused(hub: Hub) -> None:
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    assert "already" in await command(hub, TG_DM, DANA_TG, f"/link {code}")
    assert "Usage" in await command(hub, TG_DM, DANA_TG, "/link A B")


async def test_unlink_makes_the_account_someone_of_its_own(hub: Hub) -> None:
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    await command(hub, SLACK_DM, DANA_SLACK, f"/link {code}")
    dana = hub.identity.resolve(DANA_TG)
    answer = await command(hub, TG_DM, DANA_TG, "/unlink slack")
    assert answer.startswith("Unlinked: your slack account")
    assert hub.identity.resolve(DANA_SLACK).id != dana.id
    assert hub.identity.resolve(DANA_TG).id == dana.id
    alone = await command(hub, TG_DM, DANA_TG, "/unlink telegram")
    assert "nothing to unlink" in alone


async def test_unlink_in_chat_names_an_account_too(hub: Hub) -> None:
    code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
    await command(hub, SLACK_DM, DANA_SLACK, f"/link {code}")
    dana = hub.identity.resolve(DANA_TG)
    other = await command(hub, TG_DM, DANA_TG, "/unlink slack:U0EVE")
    assert other == "No slack:U0EVE is linked to you."
    answer = await command(hub, TG_DM, DANA_TG, "/unlink SLACK:U0DANA")
    assert answer.startswith("Unlinked: your slack account")
    assert hub.identity.resolve(DANA_SLACK).id != dana.id
    assert "Usage" in await command(hub, TG_DM, DANA_TG, "/unlink slack:")


async def test_admins_list_show_link_unlink_and_merge_over_the_api(hub: Hub) -> None:
    eve = hub.identity.resolve(EVE_TG)
    dana = hub.identity.resolve(DANA_TG)
    async with web(hub) as client:
        linked = await client.post(
            f"/api/people/{dana.id}/accounts",
            json={"platform": "slack", "user_id": "U0DANA"},
            headers=ADMIN,
        )
        assert linked.status_code == 200, linked.text
        shown = (await client.get(f"/api/people/{dana.id}", headers=ADMIN)).json()
        assert {(a["platform"], a["user_id"]) for a in shown["accounts"]} == {
            ("slack", "U0DANA"),
            ("telegram", "1001"),
        }
        listed = (await client.get("/api/people", headers=ADMIN)).json()
        assert next(p for p in listed if p["id"] == dana.id)["platforms"] == ["slack", "telegram"]
        merged = await client.post(
            f"/api/people/{eve.id}/merge", json={"into": dana.id}, headers=ADMIN
        )
        assert merged.status_code == 200, merged.text
        assert merged.json()["aliases"] == [eve.id]
        split = await client.delete(f"/api/people/{dana.id}/accounts/slack", headers=ADMIN)
        assert split.status_code == 200, split.text
        same = await client.post(
            f"/api/people/{dana.id}/merge", json={"into": dana.id}, headers=ADMIN
        )
        assert same.status_code == 409
        # A person's own token is not an admin's.
        made = await client.post("/api/tokens", json={"person": dana.id}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        assert (await client.get("/api/people", headers=own)).status_code == 403


async def test_an_admins_link_takes_a_stub_but_merges_a_whole_person_only_when_asked(
    hub: Hub,
) -> None:
    """Linking Carol's Telegram account to ghost merged all of Carol (her web account, her
    token, her memory) into ghost, and Carol was gone; a stub made on first contact is
    still taken over."""
    stub = hub.identity.resolve(PlatformUser("telegram", "777", "Stub"))
    account = {"platform": "telegram", "user_id": "5551234"}
    async with web(hub) as client:
        for who in ("Carol", "ghost"):  # each with a web account and a token
            await client.post("/api/tokens", json={"person": who}, headers=ADMIN)
        mine = await client.post("/api/people/carol/accounts", json=account, headers=ADMIN)
        assert mine.status_code == 200, mine.text
        refused = await client.post("/api/people/ghost/accounts", json=account, headers=ADMIN)
        assert refused.status_code == 409
        said = refused.json()["detail"]
        carol, ghost = hub.identity.find("carol"), hub.identity.find("ghost")
        assert carol is not None and ghost is not None  # Carol is still there, whole
        assert "\n" not in said and f"Carol ({carol.id})" in said and f"web:{carol.id}" in said
        assert "1 API token" in said and f"`animahub people merge {carol.id} {ghost.id}`" in said
        stub_link = {"platform": "telegram", "user_id": "777"}
        taken = await client.post("/api/people/ghost/accounts", json=stub_link, headers=ADMIN)
        assert taken.status_code == 200 and taken.json()["aliases"] == [stub.id]
        merged = await client.post(
            "/api/people/ghost/accounts", json=account | {"merge": True}, headers=ADMIN
        )
        assert merged.status_code == 200 and carol.id in merged.json()["aliases"]
    assert hub.identity.find(carol.id) is None  # merged away ("carol" names her account)
    with hub.db.session() as session:
        audit = session.exec(select(AuditEntry).where(AuditEntry.action == "person.merged")).all()
    assert [(a.target, a.detail["from"], a.detail.get("account")) for a in audit] == [
        (ghost.id, stub.id, "telegram:777"),
        (ghost.id, carol.id, "telegram:5551234"),
    ]


async def test_unlink_names_one_of_several_accounts_on_a_platform(hub: Hub) -> None:
    """After a merge ghost had two web accounts: unlinking `web` said it was all there was
    (false), and taking a platform only, neither could ever be split off."""
    dana, ghost = hub.identity.named("Dana").id, hub.identity.named("ghost").id
    async with web(hub) as client:
        merged = await client.post("/api/people/dana/merge", json={"into": "ghost"}, headers=ADMIN)
        assert merged.status_code == 200, merged.text
        which = await client.delete("/api/people/ghost/accounts/web", headers=ADMIN)
        assert which.status_code == 409
        assert which.json()["detail"] == (
            f"ghost has 2 web accounts ({', '.join(sorted([f'web:{dana}', f'web:{ghost}']))}): "
            "name the one to unlink, as web:USER_ID."
        )
        split = await client.delete(f"/api/people/ghost/accounts/web:{dana}", headers=ADMIN)
        assert split.status_code == 200, split.text
        assert [a["user_id"] for a in split.json()["person"]["accounts"]] == [ghost]
        assert [a["user_id"] for a in split.json()["split"]["accounts"]] == [dana]
        gone = await client.delete("/api/people/ghost/accounts/web:nobody", headers=ADMIN)
        assert (gone.status_code, gone.json()["detail"]) == (
            409,
            "No web:nobody is linked to ghost.",
        )
        last = await client.delete("/api/people/ghost/accounts/web", headers=ADMIN)
        assert "web account is all there is" in last.json()["detail"]


async def test_dm_memory_follows_the_linked_person_and_no_one_else(
    home: Path, clock: ManualClock
) -> None:
    hub = await started_hub(home, clock, memory={"enabled": True})
    try:
        assert hub.memory is not None
        memory = hub.memory
        # Told on Slack; the code then comes from Telegram, so the Slack person is the one
        # merged away, and what it was told is kept under its old id.
        slack = hub.identity.resolve(DANA_SLACK)
        memory.record_turn(
            TurnRecord(
                anima="aria",
                inbox_id="in-1",
                person_id=slack.id,
                person_name="Dana",
                where="a Slack DM",
                channel_key=SLACK_DM.channel_key,
                scope=f"person:{slack.id}",
                user_text="my locker code is 4471",
                reply="noted",
                at=clock.now(),
            )
        )
        await memory.drain()

        async def recalls(person: PlatformUser, where: Address) -> bool:
            scope = RecallScope(
                "aria",
                hub.identity.resolve(person).id,
                where.channel_key,
                where.kind is AddressKind.DM,
            )
            found = await memory.search(scope, "what is my locker code?")
            return any("4471" in r.text for r in found)

        code = code_in(await command(hub, TG_DM, DANA_TG, "/link"))
        assert not await recalls(DANA_TG, TG_DM)  # not linked yet: someone else
        await command(hub, SLACK_DM, DANA_SLACK, f"/link {code}")
        assert hub.identity.resolve(DANA_SLACK).id != slack.id  # merged away
        assert await recalls(DANA_TG, TG_DM)  # Dana, now in her Telegram DM too
        assert await recalls(DANA_SLACK, SLACK_DM)
        eve_dm = Address("telegram", "bot", "2002", kind=AddressKind.DM)
        assert not await recalls(EVE_TG, eve_dm)  # never for someone else
        channel = Address("slack", "T1", "C0GENERAL")
        assert not await recalls(DANA_SLACK, channel)  # nor in a channel, even hers
    finally:
        await hub.stop()


async def test_link_and_unlink_without_the_people_api_are_refused_to_non_admins(
    hub: Hub,
) -> None:
    async with web(hub) as client:
        made = await client.post("/api/tokens", json={"person": "Dana"}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        for method, path in (
            ("POST", "/api/people/dana/accounts"),
            ("DELETE", "/api/people/dana/accounts/slack"),
            ("POST", "/api/people/dana/merge"),
            ("GET", "/api/people/dana"),
        ):
            response = await client.request(method, path, headers=own, json={})
            assert response.status_code == 403, (method, path, response.text)
