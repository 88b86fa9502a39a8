"""The dashboard's "What is happening" and its platforms, in headless Chromium against a
real `animahub start` (issue 47): a page opened now shows what happened before it opened,
as its viewer may see it, then what happens live; why a platform is not up is written in
the page, not only in a chip's tooltip, with its secret never shown."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import (
    OWNER,
    BrowserPages,
    RunningHub,
    Screenshot,
    owner_link,
    sign_in_owner,
)
from tests.browser.test_dashboard import open_view
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.browser


def _happened_before(hub: RunningHub, words: str) -> None:
    """A heartbeat of aria's (everyone's to see) and a turn of the owner's with kai (the
    owner's alone), over the owner's API as a program would, before any page opens."""
    owner = hub.process.owner()
    beat = httpx.post(f"{hub.url}/api/animas/aria/heartbeat", headers=owner, timeout=60)
    assert beat.status_code == 200, beat.text
    said = httpx.post(
        f"{hub.url}/api/chat/kai",
        json={"message": words, "conversation_id": "feed"},
        headers=owner,
        timeout=60,
    )
    assert said.status_code == 200, said.text


def test_a_page_opened_later_shows_what_happened_before_then_live(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    _happened_before(hub, "The owner's words for the owner's eyes")
    # Opened after all that, and nothing happens meanwhile: the feed is not empty.
    owner = browser.new_page("owner-dashboard")
    open_view(owner, hub, "animas")
    ticker = owner.locator("#ticker")
    expect(ticker).to_contain_text("aria: heartbeat")
    expect(ticker).to_contain_text("kai: turn done")
    expect(ticker).not_to_contain_text("Nothing yet")
    expect(ticker.locator("time").first).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
    screenshot("history-owner", page=owner)
    # Then live, on the page already open, each told once.
    owner_key = hub.process.owner()
    ran = httpx.post(f"{hub.url}/api/animas/mika/heartbeat", headers=owner_key, timeout=60)
    assert ran.status_code == 200, ran.text
    expect(ticker).to_contain_text("mika: heartbeat")
    expect(ticker.locator("li", has_text="aria: heartbeat")).to_have_count(1)


def test_a_persons_page_shows_what_happened_before_that_they_may_see(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    link = hub.sign_in_link("Frank")
    _happened_before(hub, "Another turn of the owner's")
    person = browser.new_page("person-dashboard", owner=False)
    person.goto(link)
    person.get_by_role("button", name="Sign in").click()
    expect(person.locator("#user-name")).to_have_text("Frank")
    open_view(person, hub, "animas")
    ticker = person.locator("#ticker")
    expect(ticker).to_contain_text("aria: heartbeat")  # everyone's
    expect(ticker).not_to_contain_text("kai: turn")  # the owner's
    screenshot("history-person", page=person)


def test_why_a_platform_is_down_is_written_in_the_page(
    browser: BrowserPages, tmp_path: Path, screenshot: Screenshot
) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo", "--owner", OWNER).returncode == 0
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    token = "123456:ABCdefGHIjklMNOpqrSTUvwxYZ0123456789"
    process = HubProcess(
        home,
        free_port(),
        ANIMAHUB_TELEGRAM__ENABLED="true",
        ANIMAHUB_TELEGRAM__BOT_TOKEN=token,
        ANIMAHUB_TELEGRAM__API_URL=closed,
    ).start()
    try:
        page = browser.new_page("platform-reason", owner=False)
        sign_in_owner(page, owner_link(home))
        page.goto(f"{process.url}/dashboard#animas")
        expect(page.locator("#live")).to_have_text("live")
        problem = page.locator('#platform-problems li[data-platform="telegram"]')
        expect(problem).to_be_visible()  # in the page, not a tooltip
        expect(problem).to_contain_text("telegram cannot be reached since")
        expect(problem).to_contain_text("Telegram Bot API unreachable")  # the hub's reason
        expect(problem).to_contain_text("The hub tries again")
        expect(problem).to_contain_text("the Animas answer everywhere else meanwhile")
        expect(page.locator('#platform-problems li[data-platform="web"]')).to_have_count(0)
        # Every failed retry is a notice (the page re-reads the next try's time): the
        # ticker says it once, with a count, rather than a screenful of the same line.
        expect(page.locator("#ticker li", has_text="telegram is down")).to_have_count(1)
        assert token not in page.locator("body").inner_text()
        assert "ABCdef" not in page.locator("body").inner_text()
        screenshot("platform-reason", page=page)
        page.close()  # before the hub stops: a read that finds it gone is a failed request
    finally:
        process.stop()
