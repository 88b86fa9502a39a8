"""The owner is recognised by a credential, never by an address (issue 41, class 4): the data
folder's owner.key for the CLI, the owner's one-time sign-in link for their browser."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from hub.api.server import create_app
from hub.app import Hub
from hub.people.owner_key import OwnerKeyError, ensure_owner_key, owner_key_path, read_owner_key
from tests.api.signing import same_origin, sign_in
from tests.conftest import owner_headers, started_hub


@pytest.fixture
async def loopback(home: Path) -> AsyncIterator[Hub]:
    """A loopback hub without an API token: the set-up that made every loopback peer the
    owner."""
    hub = await started_hub(home, memory={"enabled": False})
    try:
        yield hub
    finally:
        await hub.stop()


def client(hub: Hub, **headers: str) -> httpx.AsyncClient:
    """ASGITransport's peer is 127.0.0.1: the loopback address, which proves nothing."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(hub)),
        base_url="http://localhost",
        headers=headers,
    )


async def test_a_loopback_request_without_a_credential_is_nobody(loopback: Hub) -> None:
    async with client(loopback) as http:
        for path in ("/api/me", "/api/people", "/api/memory/aria/episodes", "/api/deliveries"):
            assert (await http.get(path)).status_code == 401, path
        minted = await http.post("/api/tokens", json={"person": "olivia"})
        assert minted.status_code == 401
        forwarded = await http.get("/api/me", headers={"X-Forwarded-For": "127.0.0.1"})
        assert forwarded.status_code == 401


async def test_the_owner_key_is_the_owner_and_only_its_user_reads_it(
    loopback: Hub, home: Path
) -> None:
    async with client(loopback, **owner_headers(home)) as http:  # the app made the key
        me = (await http.get("/api/me")).json()
        assert (me["name"], me["via"], me["may_act_for_others"]) == ("Olivia", "owner", True)
    async with client(loopback, Authorization="Bearer aho_not-the-key") as http:
        assert (await http.get("/api/me")).status_code == 401
    path = owner_key_path(home)
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)
    with pytest.raises(OwnerKeyError, match="chmod 600"):
        read_owner_key(home)
    with pytest.raises(OwnerKeyError):
        create_app(loopback)  # the hub refuses a key others may read


def test_the_key_is_made_once_and_kept(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    first = ensure_owner_key(home)
    assert first.startswith("aho_") and len(first) > 40
    assert ensure_owner_key(home) == first == read_owner_key(home)
    owner_key_path(home).write_text("")
    with pytest.raises(OwnerKeyError, match="holds no key"):
        read_owner_key(home)


async def test_the_owners_link_opens_an_owners_session(loopback: Hub, home: Path) -> None:
    async with client(loopback, **owner_headers(home)) as owner:
        made = await owner.post("/api/signin/owner")
        assert made.status_code == 201, made.text
        link = made.json()["url"]
    async with client(loopback) as browser:
        page = await browser.get(urlsplit(link).path)
        assert page.status_code == 200 and "data-auto" in page.text  # it submits itself
        await sign_in(browser, link)
        me = (await browser.get("/api/me")).json()
        assert (me["name"], me["via"], me["may_act_for_others"]) == ("Olivia", "owner", True)
        assert (await browser.get("/api/people")).status_code == 200  # the owner's routes
        again = await browser.post(
            "/signin", data={"token": link.rsplit("/", 1)[1]}, headers=same_origin()
        )
        assert again.status_code == 410  # once


async def test_a_persons_link_is_no_owners_and_mints_no_owners_link(
    loopback: Hub, home: Path
) -> None:
    async with client(loopback, **owner_headers(home)) as owner:
        invited = (await owner.post("/api/people/Dana/invite")).json()["url"]
    async with client(loopback) as browser:
        page = await browser.get(urlsplit(invited).path)
        assert "data-auto" not in page.text  # a person clicks: previews cannot use it up
        await sign_in(browser, invited)
        me = (await browser.get("/api/me")).json()
        assert (me["name"], me["via"], me["may_act_for_others"]) == ("Dana", "session", False)
        refused = await browser.post("/api/signin/owner")
        assert refused.status_code == 403


async def test_an_owners_session_ends_being_the_owners_when_the_owner_changes(
    loopback: Hub, home: Path
) -> None:
    link = loopback.access.create_owner_signin(loopback.identity.owner().id, "test")
    async with client(loopback) as browser:
        await sign_in(browser, link.secret)
        assert (await browser.get("/api/me")).json()["via"] == "owner"
        loopback.identity.set_owner(loopback.identity.named("Dana").id)
        me = (await browser.get("/api/me")).json()
        assert (me["name"], me["via"]) == ("Olivia", "session")
        assert (await browser.get("/api/people")).status_code == 403
