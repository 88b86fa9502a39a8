"""Red team, issue 41 class 2: commands skipped DM admission. Eve, a Telegram stranger held
by `pairing`, sent `/web`, got a sign-in link, chatted in the web chat, and from then on
was answered on Telegram too: her web account counted as an account on an open platform.

Now admission decides before any command runs, wherever it is sent, and an account the hub
made itself admits nobody. These cases try the same door with other payloads: other
commands, a command in a group, a web account the hub made before this fix, Telegram's
`/start`, a code made by the stranger herself. Messages go in through `Hub.receive`, as
the adapters hand them (tests/contract/test_stranger_commands.py drives each platform).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlmodel import select

from hub.app import Hub
from hub.messages import Address, AddressKind, Command, PlatformUser
from hub.people.admission import STRANGER_COMMANDS, stranger_may
from hub.slash import COMMAND_NAMES, parse_command
from hub.store.models import Credential, CredentialKind, InboxItem
from tests.api.test_admission import EVE, EVE_DM, GROUP, notices_to, say, started
from tests.api.test_linking import command

NOTICE = "I do not know you yet"
EVE_WEB_DM = Address("web", "local", "dm:mika:eve", kind=AddressKind.DM)


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started(home)  # the defaults: pairing on Telegram and LINE
    try:
        yield instance
    finally:
        await instance.stop()


def signins(hub: Hub) -> int:
    with hub.db.session() as session:
        found = session.exec(select(Credential).where(Credential.kind == CredentialKind.SIGNIN))
        return len(found.all())


async def test_a_stranger_gets_no_sign_in_link_and_no_command_but_her_own(hub: Hub) -> None:
    refused = await command(hub, EVE_DM, EVE, "/web")
    assert NOTICE in refused and "/signin/" not in refused and signins(hub) == 0
    for text in ("/anima list", "/anima tasks", "/anima status mika", "/unlink telegram"):
        assert NOTICE in await command(hub, EVE_DM, EVE, text), text
    assert "You are Eve" in await command(hub, EVE_DM, EVE, "/whoami")
    assert NOTICE not in await command(hub, EVE_DM, EVE, "/forget-me")
    # Told the code once, in the first refusal; not a new code per command.
    assert len(hub.admission.requests()) == 1


async def test_a_command_in_a_group_is_gated_as_her_own_exchange_with_the_hub(
    hub: Hub,
) -> None:
    assert NOTICE in await command(hub, GROUP, EVE, "/anima list")
    assert NOTICE in await command(hub, GROUP, EVE, "/link")


async def test_a_web_account_the_hub_made_for_her_admits_her_nowhere_else(hub: Hub) -> None:
    # As `/web` did before the fix: a sign-in link for the stranger, a web account on first
    # use, and a web chat (open) that answers her.
    eve = hub.identity.resolve(EVE)
    hub.access.create_signin(eve.id, created_by="/web")
    web_eve = hub.identity.web_user(eve)
    assert (await say(hub, EVE_WEB_DM, web_eve, "hello from the web")).status == "done"
    held = await say(hub, EVE_DM, EVE, "and now from Telegram")
    assert held.status == "ignored" and held.anima is None
    assert NOTICE in await command(hub, EVE_DM, EVE, "/anima list")


async def test_her_own_link_code_makes_no_one_else_her(hub: Hub) -> None:
    # A bare /link from the stranger's web account is answered there (the web chat is
    # open), but redeeming it on Telegram joins Telegram to the stranger, who stays held.
    eve = hub.identity.resolve(EVE)
    web_eve = hub.identity.web_user(eve)
    code = (await command(hub, EVE_WEB_DM, web_eve, "/link")).split("code: ", 1)[1].split()[0]
    other = PlatformUser("telegram", "2003", "Eve's other phone")
    other_dm = Address("telegram", "bot", "2003", kind=AddressKind.DM)
    assert (await command(hub, other_dm, other, f"/link {code}")).startswith("Linked")
    assert (await say(hub, other_dm, other, "let me in")).status == "ignored"


async def test_the_list_is_one_place_and_names_only_the_hubs_commands() -> None:
    assert set(STRANGER_COMMANDS) <= COMMAND_NAMES
    assert {"web", "anima", "unlink"}.isdisjoint(STRANGER_COMMANDS)
    assert not stranger_may(Command("link"))  # a bare /link makes a code for others
    assert stranger_may(Command("link", ("7KQ2MX4P",)))
    start = parse_command("/whoami")  # Telegram's /start is /whoami
    assert start is not None and stranger_may(start)


async def test_refused_commands_keep_their_inbox_row_ignored_with_the_reason(hub: Hub) -> None:
    await command(hub, EVE_DM, EVE, "/web")
    with hub.db.session() as session:
        row = session.exec(select(InboxItem).where(InboxItem.text == "/web")).one()
    assert row.status == "ignored" and "not let in" in (row.error or "")
    assert not [t for t in notices_to(hub, EVE_DM) if "/signin/" in t]
