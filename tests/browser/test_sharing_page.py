"""Sharing from the dashboard (issue 47), in headless Chromium against a real hub: what the
owner told kai in the web chat stays theirs until they click "Share with the team" under
that day's episodes; then another person's DM with kai recalls it."""

from __future__ import annotations

import pytest
from playwright.sync_api import Route, expect

from tests.browser.conftest import BrowserPages, RunningHub, Screenshot
from tests.browser.test_dashboard import open_view
from tests.browser.test_web_chat import open_anima, send

pytestmark = pytest.mark.browser


def test_a_message_shared_from_the_dashboard_reaches_another_person(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    owner = browser.new_page("owner")
    open_anima(owner, hub, "kai")
    send(owner, "The guest wifi is called Larkspurvale")
    eve = browser.new_page("eve", owner=False)
    eve.goto(hub.sign_in_link("Eve"))
    eve.get_by_role("button", name="Sign in").click()
    expect(eve.locator("#user-name")).to_have_text("Eve")
    open_anima(eve, hub, "kai")
    assert "Larkspurvale" not in send(eve, "what is the guest wifi called?")  # private

    open_view(owner, hub, "memory")
    owner.select_option("#mem-anima", "kai")
    owner.click('[data-mem="episodes"]')
    mine = owner.locator("#episode-text .mine")
    expect(mine).to_contain_text("The guest wifi is called Larkspurvale")
    held: list[Route] = []
    # The share waits while the page re-reads itself.
    owner.route("**/share", lambda route: held.append(route))
    mine.get_by_role("button", name="Share with the team").click()
    for _ in range(200):  # the handler runs as Playwright dispatches events
        if held:
            break
        owner.wait_for_timeout(50)
    mine.evaluate("section => section.classList.add('before')")
    owner.click('[data-mem="episodes"]')  # as a live notice would: the section is drawn anew
    expect(owner.locator("#episode-text .mine.before")).to_have_count(0)
    expect(mine).to_have_count(1)
    expect(mine.get_by_role("button", name="Share with the team")).to_be_disabled()
    held[0].continue_()
    expect(mine).to_contain_text("shared with the team")
    expect(owner.locator("#flash")).to_contain_text("Shared with the team")
    screenshot("shared", page=owner)

    assert "Larkspurvale" in send(eve, "what is the guest wifi called now?")
