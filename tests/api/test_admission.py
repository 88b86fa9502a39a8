"""Who may reach an Anima in a DM (hub/people/admission.py, docs/people.md): the defaults (pairing
on Telegram and LINE, open elsewhere), an admin's approval, allowlist, and people known from
an open platform by a link. Messages go in through `Hub.receive`, as adapters hand them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from animahub_kit.contract.harness import eventually
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.store.models import DeliveryRow, InboxItem
from tests.api.test_linking import code_in, command
from tests.api.test_people import ADMIN, TOKEN, web
from tests.conftest import started_hub

EVE_DM = Address("telegram", "bot", "2002", kind=AddressKind.DM)
EVE = PlatformUser("telegram", "2002", "Eve")
GROUP = Address("telegram", "bot", "-5", kind=AddressKind.GROUP)
OWNER_DM = Address("web", "local", "dm:mika:olivia", kind=AddressKind.DM)
_events = iter(range(1, 10_000))


async def started(home: Path, **people: Any) -> Hub:
    clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    # people={}: the defaults, pairing on Telegram and LINE
    return await started_hub(home, clock, server={"api_token": TOKEN}, people=people)


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started(home)
    try:
        yield instance
    finally:
        await instance.stop()


async def say(hub: Hub, where: Address, who: PlatformUser, text: str) -> InboxItem:
    """Say it and wait for the hub to finish with it (answered, or held)."""
    receipt = await hub.port.receive(
        Inbound(event_id=f"m-{next(_events)}", address=where, sender=who, text=text)
    )

    def finished() -> InboxItem | None:
        with hub.db.session() as session:
            row = session.get(InboxItem, receipt.inbox_id)
        return row if row is not None and row.status in ("done", "ignored", "failed") else None

    row: InboxItem = await eventually(finished)
    return row


def notices_to(hub: Hub, where: Address) -> list[str]:
    with hub.db.session() as session:
        rows = session.exec(select(DeliveryRow).where(DeliveryRow.address == str(where))).all()
    return [r.text for r in rows]


async def test_a_stranger_on_telegram_is_told_once_and_reaches_no_anima(hub: Hub) -> None:
    first = await say(hub, EVE_DM, EVE, "hello?")
    second = await say(hub, EVE_DM, EVE, "anyone there?")
    assert [first.status, second.status] == ["ignored", "ignored"]
    assert first.anima is None and second.anima is None
    told = notices_to(hub, EVE_DM)
    assert len(told) == 1 and "let you in with the code" in told[0]  # once, not per message
    assert await say(hub, GROUP, EVE, "@mika hi") is not None  # groups are not gated here


async def test_an_admin_lets_a_stranger_in_with_the_code(hub: Hub) -> None:
    await say(hub, EVE_DM, EVE, "hello?")
    code = notices_to(hub, EVE_DM)[0].rsplit(" ", 1)[1].rstrip(".")
    refused = await command(hub, EVE_DM, EVE, f"/anima approve {code}")
    # Not by herself: a stranger runs no admin command, and is told the notice again.
    assert "I do not know you yet" in refused and "code I gave you" in refused
    owner = hub.identity.web_user(hub.identity.owner())
    answer = await command(hub, OWNER_DM, owner, f"/anima approve {code}")
    assert answer.startswith("Let in: Eve")
    after = await say(hub, EVE_DM, EVE, "hello again")
    assert after.status == "done" and after.anima == "mika"
    again = await command(hub, OWNER_DM, owner, f"/anima approve {code}")
    assert again == "No one is waiting with that code."


async def test_the_api_lists_requests_and_approves_by_request_id(hub: Hub) -> None:
    await say(hub, EVE_DM, EVE, "hello?")
    async with web(hub) as client:
        waiting = (await client.get("/api/pairing", headers=ADMIN)).json()
        assert [(w["person"], w["where"]) for w in waiting] == [
            (hub.identity.resolve(EVE).id, str(EVE_DM))
        ]
        approved = await client.post(f"/api/pairing/{waiting[0]['id']}/approve", headers=ADMIN)
        assert approved.status_code == 200, approved.text
        assert (await client.get("/api/pairing", headers=ADMIN)).json() == []
        missing = await client.post("/api/pairing/NOSUCHCODE/approve", headers=ADMIN)
        assert missing.status_code == 404
    assert (await say(hub, EVE_DM, EVE, "hi")).status == "done"


async def test_slack_dms_are_open_and_a_link_from_there_lets_telegram_in(hub: Hub) -> None:
    slack_dm = Address("slack", "T1", "D0EVE", kind=AddressKind.DM)
    slack_eve = PlatformUser("slack", "U0EVE", "Eve")
    assert (await say(hub, slack_dm, slack_eve, "hi from work")).status == "done"
    code = code_in(await command(hub, slack_dm, slack_eve, "/link"))
    # A stranger's /link CODE is always taken: the code proves who they are.
    linked = await command(hub, EVE_DM, EVE, f"/link {code}")
    assert linked.startswith("Linked")
    assert (await say(hub, EVE_DM, EVE, "hi from home")).status == "done"
    assert not [t for t in notices_to(hub, EVE_DM) if "let you in" in t]  # never held


async def test_an_allowlist_lets_in_only_whom_it_names_and_tells_no_one(home: Path) -> None:
    hub = await started(home, dm_policy={"telegram": "allowlist"}, allowlist=["telegram:3003"])
    try:
        assert (await say(hub, EVE_DM, EVE, "hello?")).status == "ignored"
        assert notices_to(hub, EVE_DM) == []  # no code to ask for
        zoe_dm = Address("telegram", "bot", "3003", kind=AddressKind.DM)
        zoe = PlatformUser("telegram", "3003", "Zoe")
        assert (await say(hub, zoe_dm, zoe, "hello")).status == "done"
    finally:
        await hub.stop()


async def test_line_is_pairing_by_default_too(hub: Hub) -> None:
    dm = Address("line", "bot", "Ueve", kind=AddressKind.DM)
    row = await say(hub, dm, PlatformUser("line", "Ueve", "Eve"), "hello?")
    assert row.status == "ignored"
    assert len(notices_to(hub, dm)) == 1


async def test_an_admins_invite_lets_in_where_a_web_account_alone_does_not(hub: Hub) -> None:
    # Eve links her Telegram to the web account an admin's invite gave her: the invite was
    # the admin's approval (role member), so her Telegram DMs reach the Animas. The web
    # account itself, made by the hub, proves nothing (issue 41, class 2).
    async with web(hub) as client:
        invited = await client.post("/api/people/Eve/invite", headers=ADMIN)
        assert invited.status_code == 201, invited.text
    eve = hub.identity.by_id(invited.json()["person"])
    assert "member" in eve.roles
    web_eve = hub.identity.web_user(eve)
    eve_web_dm = Address("web", "local", f"dm:mika:{web_eve.user_id}", kind=AddressKind.DM)
    code = code_in(await command(hub, eve_web_dm, web_eve, "/link"))
    assert (await command(hub, EVE_DM, EVE, f"/link {code}")).startswith("Linked")
    assert (await say(hub, EVE_DM, EVE, "hi from Telegram")).status == "done"
