"""Who is talking (docs/people.md): the owner by the data folder's key or their sign-in link
(never by the loopback address), per-person tokens, sign-in links, sessions bound to their
page key, `user` for admins only, names compared case-insensitively, no `guest`.

Every request goes through the real app (its guard, routes and the web adapter)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from sqlmodel import select

from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, Command, Inbound, PlatformUser
from hub.store.models import AuditEntry, Identity
from tests.api.signing import page_key_in, same_origin, sign_in
from tests.api.test_chat_api import sse_events
from tests.conftest import owner_headers, started_hub

TOKEN = "the-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "4471"


async def _started(home: Path, clock: ManualClock, **server: object) -> Hub:
    return await started_hub(
        home, clock, server={"public_url": "https://hub.example.com", **server}
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))


@pytest.fixture
async def hub(home: Path, clock: ManualClock) -> AsyncIterator[Hub]:
    """A hub with an API token: nobody is anybody without a credential."""
    instance = await _started(home, clock, api_token=TOKEN)
    try:
        yield instance
    finally:
        await instance.stop()


def web(hub: Hub, owner: bool = False) -> httpx.AsyncClient:
    """A client on the hub's app; ASGITransport's peer is 127.0.0.1, which is nobody. With
    `owner`, it sends the owner's key (the data folder's owner.key), as the CLI does."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)),
        base_url="http://localhost",
        headers=owner_headers(hub.settings.home) if owner else None,
    )


async def say(client: httpx.AsyncClient, text: str, session: str, **extra: object) -> str:
    response = await client.post(
        "/api/chat/aria", json={"message": text, "conversation_id": session, **extra}
    )
    assert response.status_code == 200, response.text
    events = sse_events(response.text)
    assert events[-1]["type"] == "done", events
    return "".join(e.get("text", "") for e in events)


def said(history: httpx.Response) -> list[str]:
    """What people said in a conversation's history."""
    return [m["text"] for m in history.json()["messages"] if m["author_kind"] == "person"]


async def token_for(client: httpx.AsyncClient, person: str) -> dict[str, str]:
    made = await client.post("/api/tokens", json={"person": person}, headers=ADMIN)
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


async def invite(client: httpx.AsyncClient, name: str) -> str:
    link = await client.post(f"/api/people/{name}/invite", headers=ADMIN)
    assert link.status_code == 201, link.text
    url: str = link.json()["url"]
    assert url.startswith("https://hub.example.com/signin/")
    return urlsplit(url).path


async def test_the_owners_key_is_the_web_chats_person(home: Path, clock: ManualClock) -> None:
    hub = await _started(home, clock)  # loopback, no API token
    try:
        async with web(hub) as client:
            # The loopback address is nobody (a proxy on this machine would be anyone).
            assert (await client.get("/api/me")).status_code == 401
            client.headers.update(owner_headers(home))
            me = (await client.get("/api/me")).json()
            owner = hub.identity.owner()
            assert (me["id"], me["name"], me["via"]) == (owner.id, "Olivia", "owner")
            whoami = await say(client, "/whoami", "s1")
            assert "you are a hub admin" in whoami
            await say(client, "mine", "s1")
            # The owner acts for another person by naming them (audited), as scripts do.
            await say(client, "hello", "s1", user="dana")
            history = await client.get(
                "/api/chat/aria/history", params={"conversation_id": "s1", "user": "dana"}
            )
            assert said(history) == ["hello"]
            own = await client.get("/api/chat/aria/history", params={"conversation_id": "s1"})
            assert said(own) == ["mine"]
        with hub.db.session() as session:
            audit = session.exec(
                select(AuditEntry).where(AuditEntry.action == "person.on_behalf")
            ).all()
        dana = hub.identity.find("dana")  # a name only the owner gave, which no one else has
        assert dana is not None
        assert [(a.actor, a.target) for a in audit] == [(f"owner:{owner.id}", dana.id)] * 2
    finally:
        await hub.stop()


async def test_nobody_falls_into_a_shared_guest(hub: Hub) -> None:
    async with web(hub) as client:
        anonymous = await client.post(
            "/api/chat/aria", json={"message": "hi", "conversation_id": "x"}
        )
        assert anonymous.status_code == 401
        dana, bob = await token_for(client, "dana"), await token_for(client, "bob")
        client.headers.update(dana)
        await say(client, f"Keep this safe: my locker code is {SECRET}", "same")
        assert hub.memory is not None
        await hub.memory.drain()
        client.headers.update(bob)  # another caller, the same session id
        answer = await say(client, "What is my locker code?", "same")
        assert SECRET not in answer
        seen = await client.get("/api/chat/aria/history", params={"conversation_id": "same"})
        assert SECRET not in seen.text
        client.headers.update(dana)
        assert SECRET in await say(client, "What is my locker code?", "new")
        people = (await client.get("/api/people", headers=ADMIN)).json()
    assert "guest" not in {p["id"] for p in people}


async def test_user_from_a_persons_token_is_refused(hub: Hub) -> None:
    async with web(hub) as client:
        dana = await token_for(client, "dana")
        await token_for(client, "bob")
        other = await client.post(
            "/api/chat/aria",
            json={"message": "hi", "conversation_id": "s", "user": "bob"},
            headers=dana,
        )
        assert other.status_code == 403
        peek = await client.get(
            "/api/chat/aria/history", params={"conversation_id": "s", "user": "bob"}, headers=dana
        )
        assert peek.status_code == 403
        post = await client.post(
            "/api/channels/general/posts", json={"text": "hi", "user": "bob"}, headers=dana
        )
        assert post.status_code == 403
        # Naming oneself, in another case, is no claim at all.
        client.headers.update(dana)
        await say(client, "hi", "s", user="DANA")
        # The admin surface is the admin token's.
        assert (await client.get("/api/deliveries")).status_code == 403
        assert (await client.post("/api/tokens", json={"person": "dana"})).status_code == 403
        # A revoked token is refused.
        listed = (await client.get("/api/tokens", headers=ADMIN)).json()
        person = hub.identity.find("dana")
        assert person is not None
        dana_id = next(t["id"] for t in listed if t["person"] == person.id)
        assert (await client.delete(f"/api/tokens/{dana_id}", headers=ADMIN)).status_code == 200
        assert (await client.get("/api/me")).status_code == 401


async def test_dana_and_dana_are_one_person(hub: Hub) -> None:
    async with web(hub) as client:
        client.headers.update(ADMIN)
        await say(client, "first", "s", user="Dana")
        await say(client, "second", "s", user="dana")
        await say(client, "third", "s", user="ＤＡＮＡ")  # full-width: NFKC, then casefold
        history = await client.get(
            "/api/chat/aria/history", params={"conversation_id": "s", "user": "DANA"}
        )
        assert said(history) == ["first", "second", "third"]
        sessions = await client.get("/api/people/dAnA/sessions")
        assert sessions.status_code == 200
    with hub.db.session() as session:
        web_ids = session.exec(select(Identity).where(Identity.platform == "web")).all()
    dana = hub.identity.find("dana")
    assert dana is not None
    assert sorted(i.person_id for i in web_ids) == sorted([dana.id, hub.identity.owner().id])


async def test_a_sign_in_link_works_once(hub: Hub) -> None:
    async with web(hub) as client:
        path = await invite(client, "Dana")
        page = await client.get(path)
        assert page.status_code == 200 and "Dana" in page.text
        token = path.rsplit("/", 1)[1]
        signed = await client.post("/signin", data={"token": token}, headers=same_origin())
        assert signed.status_code == 200 and signed.headers["cache-control"] == "no-store"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        # The cookie jar now holds the session; it is someone only with the page key.
        assert (await client.get("/api/me")).status_code == 401
        client.headers["X-Page-Key"] = page_key_in(signed)
        me = (await client.get("/api/me")).json()
        dana = hub.identity.find("Dana")
        assert dana is not None
        assert (me["id"], me["via"]) == (dana.id, "session") and "csrf_token" not in me
        again = await client.post("/signin", data={"token": token}, headers=same_origin())
        assert again.status_code == 410 and "already used" in again.text
        assert (await client.get(path)).status_code == 410


async def test_forged_and_expired_links_are_refused(hub: Hub, clock: ManualClock) -> None:
    async with web(hub) as client:
        forged = await client.post("/signin", data={"token": "x" * 43}, headers=same_origin())
        assert forged.status_code == 404 and "not valid" in forged.text
        assert (await client.get("/signin/" + "y" * 43)).status_code == 404
        path = await invite(client, "dana")
        clock.advance(timedelta(minutes=16))
        token = path.rsplit("/", 1)[1]
        late = await client.post("/signin", data={"token": token}, headers=same_origin())
        assert late.status_code == 410 and "expired" in late.text
        assert "animahub_session" not in client.cookies


async def test_a_sign_in_from_another_site_is_refused(hub: Hub) -> None:
    async with web(hub) as client:
        token = (await invite(client, "dana")).rsplit("/", 1)[1]
        evil = await client.post(
            "/signin", data={"token": token}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert evil.status_code == 403
        assert "animahub_session" not in client.cookies


async def test_a_session_needs_its_page_key_and_ends_when_revoked(hub: Hub) -> None:
    async with web(hub) as client:
        key = await sign_in(client, await invite(client, "dana"))
        del client.headers["X-Page-Key"]
        body = {"message": "hi", "conversation_id": "s"}
        bare = await client.post("/api/chat/aria", json=body)
        assert bare.status_code == 401 and "sign in again" in bare.text
        assert (
            await client.get("/api/chat/aria/history", params={"conversation_id": "s"})
        ).status_code == 401
        wrong = await client.post("/api/chat/aria", json=body, headers={"X-Page-Key": "0" * 64})
        assert wrong.status_code == 401
        assert "animahub_session" in client.cookies  # a request without the key signs nobody out
        client.headers["X-Page-Key"] = key
        await say(client, "hi", "s")
        listed = (await client.get("/api/people/dana/sessions", headers=ADMIN)).json()
        assert len(listed) == 1
        revoked = await client.delete(f"/api/sessions/{listed[0]['id']}", headers=ADMIN)
        assert revoked.status_code == 200
        refused = await client.post("/api/chat/aria", json=body)
        assert refused.status_code == 401 and "ended" in refused.text
        assert "animahub_session" not in client.cookies  # its own page forgets it
        assert (await client.get("/api/people/dana/sessions", headers=ADMIN)).json() == []


async def test_web_in_a_dm_answers_with_a_sign_in_link(hub: Hub) -> None:
    """The platform vouches for the sender: /web in their Telegram DM signs them in."""
    dm = Address("telegram", "bot", "1001", kind=AddressKind.DM)
    dana = PlatformUser("telegram", "1001", "Dana")
    receipt = await hub.port.receive(
        Inbound(event_id="tg-1", address=dm, sender=dana, text="/web", command=Command("web"))
    )
    assert receipt.reply is not None
    path = urlsplit(receipt.reply.rsplit(" ", 1)[1]).path
    async with web(hub) as client:
        await sign_in(client, path)
        me = (await client.get("/api/me")).json()
        person = hub.identity.resolve(dana)
        assert (me["id"], me["via"]) == (person.id, "session")
    group = Address("telegram", "bot", "-5", kind=AddressKind.GROUP)
    refused = await hub.port.receive(
        Inbound(event_id="tg-2", address=group, sender=dana, text="/web", command=Command("web"))
    )
    assert refused.reply is not None and "/signin/" not in refused.reply


async def test_a_name_two_people_go_by_is_refused(hub: Hub) -> None:
    """A display name is a platform's claim (Eve goes by Dana's name on Telegram): a name
    that fits two people picks neither; their ids do (and an id always wins)."""
    slack_dana = hub.identity.resolve(PlatformUser("slack", "U0DANA", "Dana Li"))
    eve = hub.identity.resolve(PlatformUser("telegram", "2009", "Dana Li"))
    assert slack_dana.id != eve.id
    async with web(hub) as client:
        client.headers.update(ADMIN)
        both = await client.post(
            "/api/chat/aria", json={"message": "hi", "conversation_id": "s", "user": "dana li"}
        )
        assert both.status_code == 409 and eve.id in both.text and slack_dana.id in both.text
        assert (await client.post("/api/people/Dana Li/invite")).status_code == 409
        await say(client, "hi", "s", user=slack_dana.id)
        history = await client.get(
            "/api/chat/aria/history", params={"conversation_id": "s", "user": slack_dana.id}
        )
        assert said(history) == ["hi"]


async def test_a_fresh_browser_is_told_the_configured_default_anima(
    home: Path, clock: ManualClock
) -> None:
    """The page opens `default_anima` (not the alphabetically first Anima) when it has no
    conversation of its own yet (adapters/web/static/app.js, chooseInitial)."""
    hub = await started_hub(home, clock, hub={"default_anima": "mika"})
    try:
        async with web(hub) as client:
            client.headers.update(owner_headers(home))
            assert (await client.get("/api/me")).json()["default_anima"] == "mika"
    finally:
        await hub.stop()
    hub = await started_hub(home, clock, hub={"default_anima": "nobody"})
    try:
        async with web(hub) as client:  # a name no Anima has is no default
            client.headers.update(owner_headers(home))
            assert (await client.get("/api/me")).json()["default_anima"] == ""
    finally:
        await hub.stop()
