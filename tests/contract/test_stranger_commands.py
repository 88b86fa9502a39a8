"""Admission before any command, per platform (issue 41 class 2, hub/people/admission.py).

Each platform's own command path, through its real adapter and fake (Telegram bot commands
and LINE typed commands as messages, Slack slash commands, Discord slash interactions) and
the web chat's API: with the platform's DMs under `pairing`, a stranger runs only
`STRANGER_COMMANDS` (`/whoami`, `/link CODE`, `/forget-me`) and is told the pairing notice
for everything else: `/web` gives no sign-in link, `/anima list` lists nothing, a bare
`/link` makes no code. After `/link CODE` from a known person they are that person, let in.

The harnesses are opened as the contract suite opens them, with two settings more: the
platform's DMs under `pairing`, and the web chat running (so that `/web` could sign in).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from animahub_kit.contract import (
    discord_harness,
    harness,
    line_harness,
    slack_harness,
    telegram_harness,
)
from animahub_kit.contract.harness import eventually
from hub.api.server import create_app
from hub.app import Hub
from hub.messages import PlatformUser
from hub.people.identity import PersonView
from hub.store.models import Credential, CredentialKind
from tests.api.test_chat_api import sse_events
from tests.conftest import started_hub

NOTICE = "I do not know you yet"
Run = Callable[[str], Awaitable[str]]
"""Sends one command as the stranger on the platform; the hub's answer as they saw it."""


def _pairing_on(platform: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Open the platform's harness with its DMs under `pairing` and the web chat on."""

    def settings(home: Path, **sections: Any) -> Any:
        sections["people"] = {"dm_policy": {platform: "pairing"}}
        sections["web"] = {"enabled": True}
        return harness.harness_settings(home, **sections)

    async def start(*args: Any, **kwargs: Any) -> Hub:
        return await harness.start_hub(*args, **{**kwargs, "with_web": True})

    module = {
        "telegram": telegram_harness,
        "line": line_harness,
        "slack": slack_harness,
        "discord": discord_harness,
    }[platform]
    monkeypatch.setattr(module, "harness_settings", settings)
    monkeypatch.setattr(module, "start_hub", start)


def _new_text(texts: Callable[[], list[str]], before: int) -> Callable[[], str | None]:
    return lambda: texts()[before] if len(texts()) > before else None


async def _typed(h: Any, texts: Callable[[], list[str]], text: str) -> str:
    """Telegram and LINE: the stranger types the command in the bot's DM."""
    before = len(texts())
    await h.dm("alice", text)
    answer: str = await eventually(_new_text(texts, before))
    return answer


@pytest.fixture(params=["telegram", "line", "slack", "discord"])
async def platform(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Hub, str, Run]]:
    """The hub, the stranger's account key, and how they run a command there."""
    name: str = request.param
    _pairing_on(name, monkeypatch)
    opens: dict[str, Callable[[Path], AbstractAsyncContextManager[Any]]] = {
        "telegram": telegram_harness.open_harness,
        "line": line_harness.open_harness,
        "slack": slack_harness.open_harness,
        "discord": discord_harness.open_harness,
    }
    opened = opens[name](tmp_path)
    async with opened as h:
        yield h.hub, h.user_key("alice"), _runner(name, h)


def _runner(name: str, h: Any) -> Run:
    if name == "telegram":
        return lambda text: _typed(h, lambda: [m.text for m in h.fake.messages], text)
    if name == "line":
        return lambda text: _typed(h, h.fake.texts, text)
    if name == "slack":
        return lambda text: _slack(h, text)
    return lambda text: _discord(h, text)


async def _slack(h: Any, text: str) -> str:
    """A Slack slash command, sent from the stranger's DM with the bot."""
    command, _, rest = text.partition(" ")
    alice = slack_harness.user_id("alice")
    status, body = await h.fake.command(alice, slack_harness.dm_channel("alice"), command, rest)
    assert status == 200, body
    answer: str = json.loads(body)["text"]
    return answer


async def _discord(h: Any, text: str) -> str:
    """A Discord slash interaction, in the stranger's DM with the bot."""
    name, *args = text.lstrip("/").split()
    options: list[dict[str, Any]]
    if name == "anima":
        options = [{"type": 1, "name": args[0], "options": []}]
    else:
        options = [{"type": 3, "name": "code", "value": a} for a in args]
    alice = h.fake.user("alice")
    data = h.fake.interaction_payload(alice, h.fake.dm_channel(alice), name, options)
    await h.fake.dispatch("INTERACTION_CREATE", data)
    response = await eventually(
        lambda: next(
            (r for r in h.fake.interaction_responses if r["interaction_id"] == data["id"]), None
        )
    )
    if response["type"] == 5:  # deferred: the answer follows up
        found = await eventually(lambda: h.fake.followups)
        return str(found[-1]["content"])
    return str(response["data"]["content"])


def _member(hub: Hub) -> PersonView:
    """Dana, on Slack, whom an admin let in: her link code proves who holds it."""
    dana = hub.identity.resolve(PlatformUser("slack", "U0DANA", "Dana"))
    return hub.admission.let_in(dana.id)


def _signins(hub: Hub) -> int:
    with hub.db.session() as session:
        rows = session.exec(select(Credential).where(Credential.kind == CredentialKind.SIGNIN))
        return len(rows.all())


async def test_a_stranger_runs_only_what_proves_who_they_are(
    platform: tuple[Hub, str, Run],
) -> None:
    hub, key, run = platform
    first = await run("/web")
    assert NOTICE in first and "/signin/" not in first
    assert _signins(hub) == 0  # no web account handed to a stranger
    assert hub.admission.requests()  # the stranger waits for an admin, with a code
    listed = await run("/anima list")
    assert NOTICE in listed and "mika" not in listed
    assert NOTICE in await run("/link")  # a bare /link makes no code for others to redeem
    whoami = await run("/whoami")
    assert NOTICE not in whoami and key in whoami  # their own data: answered
    forget = await run("/forget-me")
    assert NOTICE not in forget
    dana = _member(hub)
    linked = await run(f"/link {hub.linking.code_for(dana, 'slack:T1/D0DANA')}")
    assert linked.startswith("Linked"), linked
    assert "mika" in await run("/anima list")  # Dana's, and so let in


# --- the web chat: its own API, a person the hub made a credential for but nobody let in ---


@pytest.fixture
async def web_hub(home: Path) -> AsyncIterator[Hub]:
    instance = await started_hub(
        home, people={"dm_policy": {"web": "pairing", "telegram": "pairing"}}
    )
    try:
        yield instance
    finally:
        await instance.stop()


async def test_a_web_stranger_runs_only_what_proves_who_they_are(web_hub: Hub) -> None:
    hub = web_hub
    eve = hub.identity.resolve(PlatformUser("telegram", "2002", "Eve"))
    # A credential the hub itself made (as `/web` did for anyone before): no admin's act.
    token = hub.access.create_token(eve.id, created_by="/web").secret
    transport = httpx.ASGITransport(app=create_app(hub))
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:

        async def run(text: str) -> str:
            body = {"message": text, "conversation_id": "s1"}
            response = await client.post("/api/chat/mika", json=body, headers=headers)
            assert response.status_code == 200, response.text
            return "".join(e.get("text", "") for e in sse_events(response.text))

        listed = await run("/anima list")
        assert NOTICE in listed and "mika" not in listed
        assert NOTICE in await run("/link")
        assert "You are Eve" in await run("/whoami")
        dana = _member(hub)
        linked = await run(f"/link {hub.linking.code_for(dana, 'slack:T1/D0DANA')}")
        assert linked.startswith("Linked"), linked
        assert "mika" in await run("/anima list")


async def test_discords_http_interactions_and_slacks_socket_mode_ask_admission_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The other doors of the same platforms: Discord's signed HTTP interactions endpoint
    # (here in a guild channel: a command is gated wherever it is sent) and Slack's slash
    # commands over Socket Mode.
    _pairing_on("discord", monkeypatch)
    (tmp_path / "discord").mkdir()
    (tmp_path / "slack").mkdir()
    async with discord_harness.open_harness(tmp_path / "discord") as h:
        response = await h.signed(h.command_body("bob"))
        assert response.status_code == 200
        assert NOTICE in response.json()["data"]["content"]
    _pairing_on("slack", monkeypatch)
    async with slack_harness.open_harness(tmp_path / "slack", socket_mode=True) as s:
        bob = slack_harness.user_id("bob")
        payload = s.fake.command_payload(bob, slack_harness.dm_channel("bob"), "/web", "")
        ack = await s.fake.ack(s.fake.push("slash_commands", payload))
        assert ack is not None and NOTICE in ack["text"]
