"""Who a browser is, in headless Chromium against real `animahub start`s (issue 41, classes 4
and 10): a new user's first link, and a session cookie planted from another port.

- Nobody is the owner for being on the hub's machine: `make run` (`animahub init --demo`,
  `animahub start`) ends with a one-time link; opening it signs the owner in and the chat
  works.
- Cookies do not separate ports: a page on another port of the same host can set the hub's
  session cookie to a session of its own. The hub's page sends the page key its own sign-in
  kept (X-Page-Key); a planted cookie comes without it and is nobody."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from hub.people.identity import os_user
from tests.browser.conftest import OWNER, BrowserPages, RunningHub
from tests.browser.test_web_chat import open_anima, send
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.browser
PRINTED_LINK = re.compile(r"Open this link to chat.*:\n(http://\S+/signin/\S+)\n")


@pytest.mark.timeout(300)  # two hubs start (the module's and this one) on shared cores
def test_a_new_user_opens_the_link_start_printed_and_chats(
    browser: BrowserPages, tmp_path: Path
) -> None:
    """`make run` on a fresh HOME: `animahub init --demo`, `animahub start`, and the link its
    banner ends with, clicked in a browser that has never seen the hub."""
    fresh = tmp_path / "user"
    fresh.mkdir()
    home = fresh / ".animahub"  # the default data folder of that HOME
    init = cli(home, "init", "--demo", HOME=str(fresh))
    assert init.returncode == 0, init.stderr
    assert (home / "owner.key").stat().st_mode & 0o777 == 0o600
    # The hub itself keeps the machine's HOME: its embedding model is cached there.
    process = HubProcess(home, free_port()).start()
    try:
        banner = process.log.read_text()
        printed = PRINTED_LINK.search(banner)
        assert printed is not None, banner

        page = browser.new_page("new-user", owner=False)
        page.goto(process.url)  # before the link: nobody, the page asks for a sign-in
        browser.allow(r"(HTTP 401: GET |status of 401 \(Unauthorized\) \().*/api/")
        expect(page.locator("#token-dialog")).to_be_visible()
        page.goto(printed.group(1))
        page.wait_for_url(f"{process.url}/")
        expect(page.locator("#user-name")).to_have_text(os_user())
        expect(page.locator("#signout-button")).to_be_visible()
        open_anima(page, RunningHub(process), "aria")
        reply = send(page, "Hello from my first minute with the hub")
        assert "offline mode" in reply

        again = browser.new_page("link-used", owner=False)
        again.goto(printed.group(1))  # a one-time link: used now
        browser.allow(r"(HTTP 410: GET |status of 410 \(Gone\) \().*/signin/")
        expect(again.locator(".signin-error")).to_contain_text("already used")
        page.close()
        again.close()
    finally:
        process.stop()


class _Planter(BaseHTTPRequestHandler):
    """Another local service on another port: its page sets the hub's cookie name."""

    cookie = ""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>another port</title><p>nothing to see</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Set-Cookie", self.cookie)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def planter() -> Iterator[tuple[str, type[_Planter]]]:
    handler = type("Planter", (_Planter,), {})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def mallorys_session(hub: RunningHub) -> tuple[str, dict[str, str]]:
    """A real session of the planter's own person (a sign-in link of theirs, used outside
    any browser): the cookie's secret, and headers that speak as that session."""
    token = hub.sign_in_link("Mallory").rsplit("/", 1)[1]
    with httpx.Client(base_url=hub.url, timeout=30) as http:
        signed = http.post(
            "/signin", data={"token": token}, headers={"Sec-Fetch-Site": "same-origin"}
        )
        assert signed.is_success or signed.is_redirect, signed.text
        secret = signed.cookies["animahub_session"]
        key = re.search(r'data-key="([0-9a-f]{64})"', signed.text)
    headers = {"Cookie": f"animahub_session={secret}"}
    if key is not None:  # (before issue 41 a session had no page key: the test ran there too)
        headers["X-Page-Key"] = key.group(1)
    return secret, headers


def mallorys_messages(hub: RunningHub, mallory: dict[str, str]) -> str:
    """Mallory's conversations with aria as her session lists them (each with its first
    message): where anything typed into the planted session would be."""
    with httpx.Client(base_url=hub.url, timeout=30, headers=mallory) as http:
        sessions = http.get("/api/chat/aria/conversations")
    assert sessions.status_code == 200, sessions.text
    return sessions.text


def test_a_cookie_planted_from_another_port_is_nobody_in_a_fresh_browser(
    browser: BrowserPages, hub: RunningHub, planter: tuple[str, type[_Planter]]
) -> None:
    url, handler = planter
    secret, mallory = mallorys_session(hub)
    handler.cookie = f"animahub_session={secret}; Path=/; HttpOnly; SameSite=Strict"
    page = browser.new_page("planted", owner=False)
    page.goto(url)
    cookies = {c["name"]: c["value"] for c in page.context.cookies(hub.url)}
    assert cookies.get("animahub_session") == secret  # planted: ports share cookies

    browser.allow(r"(HTTP 401: (GET|POST) |status of 401 \(Unauthorized\) \().*/api/")
    page.goto(hub.url)
    expect(page.locator("#token-dialog")).to_be_visible()  # signed in as nobody
    expect(page.locator("#user-name")).not_to_have_text("Mallory")
    said = page.evaluate(
        """async () => (await fetch("/api/chat/aria", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({message: "typed into the planted session", session_id: "p"})
        })).status"""
    )
    assert said == 401
    assert "typed into the planted session" not in mallorys_messages(hub, mallory)


@pytest.mark.parametrize("path", ["/", "/api"])
def test_the_owners_page_never_speaks_as_a_planted_session(
    browser: BrowserPages, hub: RunningHub, planter: tuple[str, type[_Planter]], path: str
) -> None:
    """The owner is signed in; another port's page sets its own session cookie, over the
    owner's (Path=/) or beside it (Path=/api, sent first). What the owner then types never
    reaches the planted session: the page is the owner, or, its cookie gone, nobody."""
    url, handler = planter
    secret, mallory = mallorys_session(hub)
    handler.cookie = f"animahub_session={secret}; Path={path}; HttpOnly; SameSite=Strict"
    page = browser.new_page("owner")  # signed in with the owner's link
    page.goto(url)
    browser.allow(r"(HTTP 401: (GET|POST) |status of 401 \(Unauthorized\) \().*/api/")
    words = f"the owner's words for aria {path}"
    if path == "/":  # the owner's cookie was overwritten: the page is nobody now
        page.goto(hub.url)
        expect(page.locator("#token-dialog")).to_be_visible()
        expect(page.locator("#user-name")).not_to_have_text("Mallory")
    else:  # both cookies arrive; the page key picks the owner's
        open_anima(page, hub, "aria")
        expect(page.locator("#user-name")).to_have_text(OWNER)
        send(page, words)
    assert words not in mallorys_messages(hub, mallory)
    assert _me(page) in (401, OWNER)


def _me(page: Page) -> int | str:
    """Who the page's own requests are (its fetch, with its page key): a name, or 401."""
    result: int | str = page.evaluate(
        """async () => {
            const key = localStorage.getItem("animahub.pagekey") || "";
            const res = await fetch("/api/me", {headers: {"X-Page-Key": key}});
            return res.ok ? (await res.json()).name : res.status;
        }"""
    )
    return result
