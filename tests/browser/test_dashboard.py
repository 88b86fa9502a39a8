"""The dashboard at /dashboard in headless Chromium, against a real `animahub start`.

Every view loads with no console error, the web chat's turns arrive live over WS /ws,
pause and resume work from the page, and a person who is not an admin sees no admin
control while the API refuses their admin calls. Screenshots land in artifacts/."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import (
    OWNER,
    BrowserPages,
    RunningHub,
    Screenshot,
    owner_link,
    sign_in_owner,
)
from tests.browser.test_web_chat import open_anima, send
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.browser

VIEWS = ("animas", "conversations", "memory", "tasks", "outbox", "audit", "charts")


def open_view(page: Page, hub: RunningHub, view: str) -> None:
    page.goto(f"{hub.url}/dashboard#{view}")
    expect(page.locator(f"#view-{view}")).to_be_visible()
    expect(page.locator("#live")).to_have_text("live")  # the WebSocket said hello


def card(page: Page, anima: str) -> Locator:
    return page.locator(f'article.anima[data-anima="{anima}"]')


def test_every_view_loads_for_the_owner(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    open_view(page, hub, "animas")
    expect(page.locator("#who")).to_have_text(f"{OWNER} (admin)")
    expect(page.locator("article.anima h3")).to_have_text(["mika", "aria", "kai"])  # the tree
    expect(page.locator("#platforms")).to_contain_text("web: up")
    for view in VIEWS:
        page.click(f'.tabs a[data-view="{view}"]')
        expect(page.locator(f"#view-{view}")).to_be_visible()
        page.wait_for_load_state("networkidle")
        screenshot(view)
    expect(page.locator("#chart-messages")).to_be_visible()
    expect(page.locator("#kanban .column")).to_have_count(7)


def test_a_chat_turn_arrives_live_and_is_remembered(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    dashboard = browser.new_page("dashboard")
    open_view(dashboard, hub, "animas")
    turns = card(dashboard, "kai").locator("dd").nth(3)  # turns today
    before = int(turns.inner_text())

    chat = browser.new_page("chat")
    open_anima(chat, hub, "kai")
    send(chat, "We decided the release procedure: run tests, tag, push, announce")

    # No reload: the live feed's notice made the page read again.
    expect(dashboard.locator("#ticker")).to_contain_text("kai: turn done")
    expect(turns).to_have_text(str(before + 1))
    screenshot("live", page=dashboard)

    dashboard.click('.tabs a[data-view="conversations"]')
    dashboard.locator("#conv-list button", has_text="DM with").first.click()
    expect(dashboard.locator("#conv-turns")).to_contain_text("the release procedure")

    hub.cli("consolidate", "kai", "--daily", "--today")
    dashboard.click('.tabs a[data-view="memory"]')
    dashboard.select_option("#mem-anima", "kai")
    dashboard.click('[data-mem="episodes"]')
    expect(dashboard.locator("#episode-text")).to_contain_text("release procedure")  # today's
    expect(dashboard.locator("#episode-text")).not_to_contain_text("<!-- memory:")
    dashboard.locator("#episode-days button").first.click()
    expect(dashboard.locator("#episode-text h2")).to_have_text(re.compile(r"episodes/.*\.md"))
    dashboard.click('[data-mem="graph"]')
    expect(dashboard.locator("#graph canvas").first).to_be_attached()
    dashboard.click('[data-mem="search"]')
    dashboard.fill('#mem-search-form input[name="query"]', "release procedure")
    dashboard.click("#mem-search-form button")
    expect(dashboard.locator("#mem-results .why").first).to_contain_text("Shares the words")
    screenshot("memory-search", page=dashboard)


GRAPH_BOXES = """() => document.getElementById("graph")._cyreg.cy.nodes().map(
    (n) => n.renderedBoundingBox({ includeLabels: true, includeOverlays: false }))"""


def test_the_knowledge_graphs_labels_do_not_overlap(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    """Notes that link to nothing were drawn two to a row, their titles written over each
    other ("Budget code for ProjHow to deploy")."""
    titles = [
        f"{topic} for Project Falcon, as agreed"
        for topic in (
            "Budget code",
            "How to deploy",
            "Staging server",
            "Renew the SSL certificate",
            "Plan: demo the dashboard",
            "Decision: ship the beta",
            "Locker code",
            "Vendor contact",
            "Office wifi",
            "On-call phone",
            "Release train",
            "Client meeting notes",
        )
    ]
    for n, title in enumerate(titles):
        link = f" See [[note-{n + 1}]]." if n < 3 else ""  # three linked, nine alone
        note = f'---\ntitle: "{title}"\n---\n{title} is written down here.{link}'
        wrote = httpx.post(
            f"{hub.url}/api/memory/mika/write",
            json={"path": f"knowledge/note-{n}.md", "content": note},
            headers=hub.process.owner(),
            timeout=10,
        )
        assert wrote.status_code == 200, wrote.text
    open_view(page, hub, "memory")
    page.select_option("#mem-anima", "mika")
    page.click('[data-mem="graph"]')
    expect(page.locator("#graph canvas").first).to_be_attached()
    page.wait_for_function('document.getElementById("graph")._cyreg?.cy?.nodes().length >= 12')
    edges = 'document.getElementById("graph")._cyreg.cy.edges().length'
    assert page.evaluate(f"() => {edges}") == 3
    boxes = page.evaluate(GRAPH_BOXES)
    screenshot("graph")
    overlapping = [
        (i, j)
        for i, a in enumerate(boxes)
        for j, b in enumerate(boxes[i + 1 :], i + 1)
        if a["x1"] < b["x2"] and b["x1"] < a["x2"] and a["y1"] < b["y2"] and b["y1"] < a["y2"]
    ]
    assert not overlapping, [(titles[i], titles[j]) for i, j in overlapping]


ADDRESS_LINES = """(el) => {
    const range = document.createRange();
    range.selectNodeContents(el);
    const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    return [el.textContent.length, tops.size];
}"""


def test_on_a_phone_the_outbox_scrolls_in_its_box_and_keeps_addresses_whole(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    """At 390 px the table was squeezed to the screen: "web:local/general" one character a
    line, and the error column cut off."""
    hub.cli("chat", "kai", "hello from a phone")  # a reply: a sent delivery
    page.set_viewport_size({"width": 390, "height": 800})
    open_view(page, hub, "outbox")
    page.select_option("#outbox-status", "sent")
    address = page.locator("#outbox-rows .address").first
    expect(address).to_be_visible()
    # The lines the address's text takes (a cell is as tall as its row, so not its height).
    chars, lines = page.evaluate(ADDRESS_LINES, address.element_handle())
    screenshot("outbox-phone")
    assert chars / lines >= 12, (chars, lines)  # squeezed, it was two characters a line
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= 390, wide  # the page itself never scrolls sideways


def test_pause_and_resume_from_the_page(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    open_view(page, hub, "animas")
    mika = page.locator('article.anima[data-anima="mika"]')
    mika.get_by_role("button", name="Pause").click()
    expect(mika.locator(".status")).to_have_text("paused")
    expect(page.locator("#ticker")).to_contain_text("mika paused")
    screenshot("paused")
    mika.get_by_role("button", name="Resume").click()
    expect(mika.locator(".status")).to_have_text("running")
    page.click('.tabs a[data-view="audit"]')
    expect(page.locator("#audit-rows")).to_contain_text("anima.pause")
    expect(page.locator("#audit-rows")).to_contain_text("anima.resume")


def test_a_person_sees_no_admin_controls_and_is_refused_admin_calls(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    owner = browser.new_page("owner")
    open_anima(owner, hub, "aria")
    send(owner, "The vault code is 9911")
    dana = browser.new_page("dana", owner=False)
    dana.goto(hub.sign_in_link("Eve"))
    dana.get_by_role("button", name="Sign in").click()
    expect(dana.locator("#user-name")).to_have_text("Eve")
    open_anima(dana, hub, "aria")
    send(dana, "My locker code is in the blue notebook")

    open_view(dana, hub, "animas")
    expect(dana.locator("#who")).to_have_text("Eve")
    for view in ("tasks", "outbox", "audit"):
        expect(dana.locator(f'.tabs a[data-view="{view}"]')).to_be_hidden()
    expect(dana.get_by_role("button", name="Pause")).to_have_count(0)
    expect(dana.get_by_role("button", name="Run heartbeat")).to_have_count(0)
    screenshot("person", page=dana)

    # What the page does not offer, the API refuses (with the session's page key, so the
    # refusal is about rights, not the key).
    browser.allow(r"403.*/api/animas/aria/pause")
    status = dana.evaluate(
        """async () => {
            const key = localStorage.getItem("animahub.pagekey");
            const res = await fetch("/api/animas/aria/pause", {method: "POST",
                headers: {"X-Page-Key": key, "Content-Type": "application/json"},
                body: "{}"});
            return res.status;
        }"""
    )
    assert status == 403

    dana.click('.tabs a[data-view="conversations"]')
    expect(dana.locator("#conv-list button")).to_have_count(1)  # hers, not the owner's
    expect(dana.locator("#conv-list")).to_contain_text("DM with Eve")
    dana.click('.tabs a[data-view="memory"]')
    dana.select_option("#mem-anima", "aria")
    dana.click('[data-mem="search"]')
    dana.fill('#mem-search-form input[name="query"]', "vault code locker code")
    dana.click("#mem-search-form button")
    expect(dana.locator("#mem-results")).to_contain_text("blue notebook")
    expect(dana.locator("#mem-results")).not_to_contain_text("9911")  # the owner's DM


def test_a_platform_that_is_down_is_named_on_each_anima(
    browser: BrowserPages, tmp_path: Path, screenshot: Screenshot
) -> None:
    """Telegram's API cannot be reached: each card says "telegram down", not a bare
    "platform down", since the Anima still answers on the web."""
    home = tmp_path / "home"
    assert cli(home, "init", "--demo", "--owner", OWNER).returncode == 0
    closed = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    process = HubProcess(
        home,
        free_port(),
        ANIMAHUB_TELEGRAM__ENABLED="true",
        ANIMAHUB_TELEGRAM__BOT_TOKEN="123456:ABCdef",
        ANIMAHUB_TELEGRAM__API_URL=closed,
    ).start()
    try:
        page = browser.new_page("platform-down", owner=False)
        sign_in_owner(page, owner_link(home))  # this hub's owner, not the module hub's
        page.goto(f"{process.url}/dashboard#animas")
        expect(page.locator("#live")).to_have_text("live")
        expect(page.locator("#platforms")).to_contain_text("telegram: down")
        status = card(page, "aria").locator("header .status")
        expect(status).to_have_text("telegram down")
        expect(status).to_have_attribute("title", re.compile("every other platform works"))
        screenshot("cards", page=page)
        # Closed before the hub stops: the page re-reads on the stop's notices, and a read
        # that finds the hub gone is a failed request.
        page.close()
    finally:
        process.stop()


def test_a_heartbeat_shows_on_its_card_and_in_the_ticker_live(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    open_view(page, hub, "animas")
    ticker = page.locator("#ticker")
    # What happened before the page opened is there already (the hub's start, at least).
    expect(ticker).to_contain_text("web is up")
    beats = ticker.locator("li", has_text="aria: heartbeat")
    before = beats.count()
    last = card(page, "aria").locator("dd").nth(1)  # last heartbeat
    expect(last).to_have_text("never")

    hub.cli("heartbeat", "aria")  # through the running hub's API

    # No reload: the heartbeat's notice made the page read again.
    expect(last).to_contain_text("ago")
    expect(last).to_contain_text("heartbeat")  # what came of it
    expect(beats).to_have_count(before + 1)
    screenshot("after-heartbeat")


def test_conversations_and_memory_show_what_was_said_rendered_and_escaped(
    browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    """The list shows the last words said (not the offline note in place of a reply),
    "turn" counted right, and memory's markdown rendered: bold, never HTML from the text."""
    chat = browser.new_page("chat")
    open_anima(chat, hub, "mika")
    chat.fill("#composer-input", "Ask **Walter** about the <img src=x> badge pickup")
    chat.keyboard.press("Enter")  # not send(): the page shows it rendered, not as typed
    expect(chat.locator(".msg-anima .bubble").last).to_contain_text("badge pickup")
    expect(chat.locator("#messages")).to_have_attribute("aria-busy", "false")

    dashboard = browser.new_page("dashboard")
    open_view(dashboard, hub, "conversations")
    row = dashboard.locator("#conv-list button", has_text="badge pickup")
    expect(row).to_have_count(1)
    expect(row.locator(".excerpt strong")).to_have_text("Walter")
    expect(row.locator(".excerpt")).to_contain_text("<img src=x> badge pickup")
    expect(row).not_to_contain_text("_(answered in offline mode)_")
    expect(row).to_contain_text(" · 2 turns · ")
    row.click()
    expect(dashboard.locator("#conv-turns .note")).to_have_text("answered in offline mode")

    dashboard.click('.tabs a[data-view="memory"]')
    dashboard.select_option("#mem-anima", "mika")
    episode = dashboard.locator("#episode-text")
    expect(episode).to_contain_text("badge pickup")
    expect(episode.locator("strong", has_text=OWNER).first).to_be_visible()
    expect(episode).not_to_contain_text("**")
    # mika's only episode in this module's hub: counted as "1 item", as a turn is "1 turn".
    expect(dashboard.locator("#episode-days button").first).to_have_text(re.compile(r"· 1 item$"))
    dashboard.click('[data-mem="search"]')
    dashboard.fill('#mem-search-form input[name="query"]', "badge pickup")
    dashboard.click("#mem-search-form button")
    result = dashboard.locator("#mem-results .result", has_text="badge pickup").first
    expect(result.locator("strong", has_text="Walter")).to_be_visible()
    expect(result).not_to_contain_text("**")
    expect(dashboard.locator("#view-memory img, #conv-list img")).to_have_count(0)
    screenshot("memory-search", page=dashboard)
