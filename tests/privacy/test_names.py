"""Red team, issue 41 class 3: a display name is taken as a person.

A Telegram stranger calls themselves "Carol" (anyone picks their own display name) and
writes first. Before, they became person `carol`: `people invite Carol` then signed the real
Carol into the stranger's person (her DMs recalled to the stranger), and `[hub] admins =
["web:carol"]` made the stranger an admin after `/web`. Now no display name picks anyone
(hub/people/names.py): person ids are opaque, every place that takes a name asks when the
name is a platform's or several people's (409 with the candidates and their accounts), and
config names accounts by their platform's user id or an admin's person by id. Through the
real hub and its API, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlmodel import select

from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.people.linking import Account
from hub.settings import ConfigError
from hub.slash import parse_command
from hub.store.db import MIGRATIONS, Database
from hub.store.models import AuditEntry, CredentialKind, Identity, Person
from tests.api.signing import sign_in
from tests.conftest import started_hub

TOKEN = "the-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
STRANGER = PlatformUser("telegram", "5551234", "Carol")
OPAQUE = re.compile(r"u-[0-9a-f]{10}")
SECRET = "the vault code is 8812"


def _settings(database_url: str, **hub: Any) -> dict[str, Any]:
    return {
        "server": {"api_token": TOKEN, "public_url": "https://hub.example.com"},
        "storage": {"database_url": database_url},
        "hub": hub,
    }


async def _hub(home: Path, database_url: str, **hub: Any) -> Hub:
    clock = ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC))
    return await started_hub(home, clock, **_settings(database_url, **hub))


@pytest.fixture
async def hub(home: Path, database_url: str) -> AsyncIterator[Hub]:
    instance = await _hub(home, database_url)
    try:
        yield instance
    finally:
        await instance.stop()


def web(hub: Hub) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)), base_url="http://localhost"
    )


async def tg_dm(hub: Hub, who: PlatformUser, text: str, n: int) -> str:
    where = Address("telegram", "bot", who.user_id, kind=AddressKind.DM)
    receipt = await hub.port.receive(
        Inbound(
            event_id=f"tg-{n}", address=where, sender=who, text=text, command=parse_command(text)
        )
    )
    return receipt.reply or ""


def the_stranger(hub: Hub) -> str:
    return hub.identity.resolve(STRANGER).id


# --- the stranger's person ----------------------------------------------------------------


async def test_a_strangers_person_id_is_not_made_from_their_display_name(hub: Hub) -> None:
    """`carol` was the stranger's id, and `web:carol` their web account after `/web`."""
    stranger = the_stranger(hub)
    assert OPAQUE.fullmatch(stranger) and "carol" not in stranger
    web_account = hub.identity.web_user(hub.identity.by_id(stranger))
    assert web_account.key == f"web:{stranger}"
    with hub.db.session() as session:
        assert session.get(Person, "carol") is None
        assert session.get(Identity, ("web", "carol")) is None


# --- every place a name picks a person ----------------------------------------------------

# (method, path, body): each names "Carol", whom only the stranger goes by.
BY_NAME = [
    ("GET", "/api/people/Carol", None),
    ("GET", "/api/people/carol/sessions", None),
    ("GET", "/api/people/Carol/handoffs", None),
    ("POST", "/api/people/Carol/invite", None),
    ("POST", "/api/people/Carol/forget", None),
    ("POST", "/api/people/Carol/accounts", {"platform": "slack", "user_id": "U0CAROL"}),
    ("DELETE", "/api/people/Carol/accounts/telegram", None),
    ("POST", "/api/people/Carol/merge", {"into": "Olivia"}),
    ("PUT", "/api/people/owner", {"name": "Carol", "create": False}),
    ("PUT", "/api/people/owner", {"name": "CAROL"}),
    ("POST", "/api/tokens", {"person": "Carol", "create": False}),
    ("POST", "/api/tokens", {"person": "carol"}),
    ("GET", "/api/tokens?person=Carol", None),
    ("POST", "/api/chat/aria", {"message": "hi", "conversation_id": "s", "user": "Carol"}),
    ("GET", "/api/chat/aria/history?conversation_id=s&user=carol", None),
    ("POST", "/api/channels/general/posts", {"text": "hi", "user": "Carol"}),
    ("GET", "/api/conversations?person=Carol", None),
]


@pytest.mark.parametrize(
    ("method", "path", "body"), BY_NAME, ids=[f"{m} {p}" for m, p, _ in BY_NAME]
)
async def test_a_name_only_a_stranger_goes_by_picks_no_one_it_asks(
    hub: Hub, method: str, path: str, body: dict[str, Any] | None
) -> None:
    """Each entry point answers 409 naming the candidates with their accounts; nothing is
    done to the stranger (no link, token, owner, forget, link, on-behalf)."""
    stranger = the_stranger(hub)
    owner_before = hub.identity.owner().id
    async with web(hub) as client:
        answer = await client.request(method, path, json=body, headers=ADMIN)
    assert answer.status_code == 409, answer.text
    assert answer.json()["candidates"] == [
        {"id": stranger, "name": "Carol", "accounts": ["telegram:5551234"]}
    ]
    assert "is a name, not a person id" in answer.json()["detail"]
    assert hub.identity.owner().id == owner_before
    for kind in (CredentialKind.SIGNIN, CredentialKind.API_TOKEN):
        assert hub.access.listing(kind, stranger) == []
    with hub.db.session() as session:
        acted = session.exec(select(AuditEntry).where(AuditEntry.target == stranger)).all()
    assert acted == []
    assert hub.linking.accounts(stranger)[0].key == "telegram:5551234"  # linked to nobody


async def test_an_invite_for_the_real_carol_never_signs_her_into_the_stranger(hub: Hub) -> None:
    """The issue's attack: the stranger wrote first, the admin invites Carol. The invite asks;
    asked for someone new, Carol is her own person, and what she tells an Anima in the web
    chat is never recalled to the stranger on Telegram."""
    stranger = the_stranger(hub)
    await tg_dm(hub, STRANGER, "hello there", 1)
    async with web(hub) as client:
        asked = await client.post("/api/people/Carol/invite", headers=ADMIN)
        assert asked.status_code == 409
        made = await client.post("/api/people/Carol/invite", json={"new": True}, headers=ADMIN)
        assert made.status_code == 201, made.text
        carol = made.json()["person"]
        assert carol != stranger and made.json()["created"]
        await sign_in(client, made.json()["url"])  # the session cookie and its page key
        me = (await client.get("/api/me")).json()
        assert me["id"] == carol
        chat = await client.post(
            "/api/chat/aria", json={"message": f"Remember: {SECRET}", "conversation_id": "c1"}
        )
        assert chat.status_code == 200
    assert hub.memory is not None
    await hub.memory.drain()
    reply = await tg_dm(hub, STRANGER, "What is the vault code?", 2)
    assert "8812" not in reply
    # Carol's own id picks her from now on; the name still asks (two people go by it).
    async with web(hub) as client:
        shown = await client.get(f"/api/people/{carol}", headers=ADMIN)
        assert shown.status_code == 200 and shown.json()["accounts"][0]["platform"] == "web"
        both = await client.get("/api/people/Carol", headers=ADMIN)
        assert {c["id"] for c in both.json()["candidates"]} == {carol, stranger}


async def test_a_stranger_goes_by_the_owners_name_and_does_not_become_owner(
    home: Path, database_url: str
) -> None:
    """`[hub] owner = "Olivia"` made the owner from the person called Olivia: a stranger
    who wrote before the owner was made (or after an owner change) took it."""
    db = Database(database_url)
    db.migrate()
    from hub.people.identity import IdentityService
    from tests.conftest import make_settings

    settings = make_settings(home, **_settings(database_url))
    IdentityService.of(settings, db).resolve(PlatformUser("telegram", "666", "Olivia"))
    db.dispose()
    hub = await _hub(home, database_url)
    try:
        owner = hub.identity.owner()
        assert owner.display_name == "Olivia"
        with hub.db.session() as session:
            squatter = session.get(Identity, ("telegram", "666"))
        assert squatter is not None and squatter.person_id != owner.id
        assert not hub.identity.by_id(squatter.person_id).is_admin
    finally:
        await hub.stop()


# --- admins and allowlists -----------------------------------------------------------------


async def test_admins_web_carol_never_makes_the_stranger_an_admin(
    home: Path, database_url: str
) -> None:
    """With `admins = ["web:carol"]` the stranger became an admin after `/web` (the web
    account the hub handed them was `web:carol`)."""
    hub = await _hub(home, database_url, admins=["web:carol"])
    try:
        reply = await tg_dm(hub, STRANGER, "/web", 1)
        assert "/signin/" in reply
        stranger = hub.identity.resolve(STRANGER)
        web_account = hub.identity.web_user(stranger)
        assert web_account.key != "web:carol"
        assert not hub.identity.resolve(web_account).is_admin
        assert not hub.identity.by_id(stranger.id).is_admin
    finally:
        await hub.stop()


def _squatter(database_url: str, users: Path) -> None:
    """A data root written by the old code: the stranger is person `carol` (made from their
    display name), and the admin's `people invite Carol` went to them."""
    db = Database(database_url)
    db.migrate()
    with db.session() as session:
        session.add(Person(id="carol", display_name="Carol", roles=[]))
        session.flush()
        session.add(
            Identity(
                platform="telegram", user_id="5551234", person_id="carol", display_name="Carol"
            )
        )
        session.add(
            Identity(platform="web", user_id="carol", person_id="carol", display_name="Carol")
        )
        session.add(
            AuditEntry(actor="owner:olivia", where="api", action="person.invite", target="carol")
        )
    db.dispose()
    users.mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("entry", ["web:carol", "person:carol"])
async def test_a_config_naming_a_squatted_name_stops_the_hub_in_one_line(
    home: Path, database_url: str, entry: str
) -> None:
    _squatter(database_url, home / "shared" / "users")
    hub = Hub(_make(home, database_url, admins=[entry]))
    with pytest.raises(ConfigError) as stopped:
        await hub.start()
    said = str(stopped.value)
    assert "\n" not in said
    assert said.startswith(f"[hub] admins: {entry!r}")
    assert "telegram:5551234" in said or "people audit" in said
    assert "person:ID" in said  # how to write it now
    await hub.stop()


def _make(home: Path, database_url: str, **hub: Any) -> Any:
    from tests.conftest import make_settings

    return make_settings(home, **_settings(database_url, **hub))


@pytest.mark.parametrize(
    "entry", ["telegram:carol", "telegram:@carol", "slack:carol", "discord:Carol#1234", "Carol"]
)
def test_an_account_named_by_a_name_is_refused_as_settings_load(home: Path, entry: str) -> None:
    for section, key in (("hub", "admins"), ("people", "allowlist")):
        with pytest.raises(ConfigError) as refused:
            _make_section(home, section, key, entry)
        assert "\n" not in str(refused.value) and entry in str(refused.value)


def _make_section(home: Path, section: str, key: str, entry: str) -> None:
    from tests.conftest import make_settings

    make_settings(home, **{section: {key: [entry]}})


async def test_admins_by_person_id_of_an_admins_person(home: Path, database_url: str) -> None:
    hub = await _hub(home, database_url)
    try:
        dana = hub.identity.create("Dana", "owner")
    finally:
        await hub.stop()
    hub = await _hub(home, database_url, admins=[f"person:{dana.id}"])
    try:
        assert hub.identity.by_id(dana.id).is_admin
    finally:
        await hub.stop()
    stranger_hub = await _hub(home, database_url)
    try:
        stranger = the_stranger(stranger_hub)
    finally:
        await stranger_hub.stop()
    hub = Hub(_make(home, database_url, admins=[f"person:{stranger}"]))
    with pytest.raises(ConfigError, match="telegram:5551234"):
        await hub.start()
    await hub.stop()


# --- finding and splitting who took a name ---------------------------------------------------


async def test_people_audit_finds_the_squatter_and_unlink_splits_them_off(
    home: Path, database_url: str
) -> None:
    _squatter(database_url, home / "shared" / "users")
    hub = await _hub(home, database_url)
    try:
        async with web(hub) as client:
            audit = (await client.get("/api/people/audit", headers=ADMIN)).json()
            assert [row["id"] for row in audit] == ["carol"]
            assert audit[0]["accounts"] == ["telegram:5551234", "web:carol"]
            assert "picked by an admin (person.invite)" in audit[0]["why"]
            assert audit[0]["split"] == ["telegram:5551234"]
            # Typed, the squatted id is a name like any other: it asks.
            assert (await client.post("/api/people/carol/invite", headers=ADMIN)).status_code == 409
            # `person:carol` is the id and nothing else: how the audit says to split.
            split = await client.delete(
                "/api/people/person:carol/accounts/telegram:5551234", headers=ADMIN
            )
            assert split.status_code == 200, split.text
            stranger = split.json()["split"]["id"]
            assert OPAQUE.fullmatch(stranger)
        assert hub.identity.aliases_of(stranger) == ()  # nothing of carol's is theirs
        assert hub.identity.resolve(STRANGER).id == stranger
    finally:
        await hub.stop()


def test_the_migration_tells_an_admins_people_from_a_platforms(database_url: str) -> None:
    """Rows written before `named_by`: a person made with their web account (an invite,
    `user`, the owner) was an admin's; one made from a Telegram account, a platform's, even
    once it has a web account from `/web` too."""
    db = Database(database_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    at = "2026-12-01 09:00:00"
    later = "2026-12-01 10:00:00"
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0012")
        for person_id, name in (("dana", "Dana"), ("carol", "Carol")):
            conn.execute(
                sa.text(
                    "INSERT INTO person (id, display_name, timezone, language, roles, "
                    "created_at) VALUES (:id, :name, 'UTC', 'en', '[]', :at)"
                ),
                {"id": person_id, "name": name, "at": at},
            )
        for platform, user_id, person_id, when in (
            ("web", "dana", "dana", at),
            ("telegram", "5551234", "carol", at),
            ("web", "carol", "carol", later),
        ):
            conn.execute(
                sa.text(
                    "INSERT INTO identity (platform, user_id, person_id, display_name, is_bot, "
                    "created_at) VALUES (:p, :u, :person, '', false, :at)"
                ),
                {"p": platform, "u": user_id, "person": person_id, "at": when},
            )
    db.migrate()
    with db.session() as session:
        named = {p.id: p.named_by for p in session.exec(select(Person)).all()}
    db.dispose()
    assert named == {"dana": "legacy", "carol": ""}


async def test_an_allowlist_names_an_admins_person_by_id(home: Path, database_url: str) -> None:
    """`[people] allowlist = ["person:ID"]` lets in the person an admin created, on every
    account of theirs, and nobody who merely goes by their name."""
    hub = await _hub(home, database_url)
    try:
        dana = hub.identity.create("Dana", "owner")
    finally:
        await hub.stop()
    policy = {"telegram": "allowlist", "web": "allowlist"}
    settings = _make(home, database_url)
    settings = settings.model_copy(
        update={
            "people": settings.people.model_copy(
                update={"dm_policy": policy, "allowlist": [f"person:{dana.id}"]}
            )
        }
    )
    hub = Hub(settings, clock=ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC)))
    await hub.start()
    try:
        her_phone = PlatformUser("telegram", "4242", "Dana")
        hub.linking.attach(dana.id, Account("telegram", "4242", "Dana"), "owner:x")
        namesake = PlatformUser("telegram", "6666", "Dana")
        assert hub.admission.known(hub.identity.resolve(her_phone), her_phone.key)
        assert not hub.admission.known(hub.identity.resolve(namesake), namesake.key)
    finally:
        await hub.stop()


async def test_a_person_filtering_by_a_shared_name_learns_no_candidates(hub: Hub) -> None:
    """The 409's candidates (ids and accounts) are for admins: a person's own token asking
    for conversations with "Carol" gets none, not the list of who goes by it."""
    the_stranger(hub)
    async with web(hub) as client:
        made = await client.post("/api/tokens", json={"person": "Bob"}, headers=ADMIN)
        bob = {"Authorization": f"Bearer {made.json()['token']}"}
        mine = await client.get("/api/conversations", params={"person": "Carol"}, headers=bob)
        assert mine.status_code == 200 and mine.json() == {"conversations": []}
        assert "5551234" not in mine.text
        other = await client.post(
            "/api/chat/aria",
            json={"message": "hi", "conversation_id": "s", "user": "Carol"},
            headers=bob,
        )
        assert other.status_code == 403 and "5551234" not in other.text
