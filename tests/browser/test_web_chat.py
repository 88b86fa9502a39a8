"""The web chat at / in headless Chromium, against a real `animahub start` in offline mode.

The module's tests share one hub (tests/browser/conftest.py), so each talks to its own
Anima or with words of its own, and none relies on another having run."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Page, Request, expect

from tests.browser.conftest import OWNER, BrowserPages, RunningHub, Screenshot

pytestmark = pytest.mark.browser


def open_anima(page: Page, hub: RunningHub, anima: str) -> None:
    page.goto(f"{hub.url}/#anima/{anima}")
    expect(page.locator("#conv-title")).to_have_text(anima)
    expect(page.locator("#composer-input")).to_be_enabled()


def send(page: Page, text: str) -> str:
    """Type `text` and send it; wait for the whole streamed reply and return it."""
    with page.expect_response(
        lambda r: r.request.method == "POST" and "/api/chat/" in r.url
    ) as sent:
        page.fill("#composer-input", text)
        page.keyboard.press("Enter")
    assert sent.value.headers["content-type"].startswith("text/event-stream")
    expect(page.locator(".msg-mine").last).to_contain_text(text)
    reply = page.locator(".msg-anima .bubble").last
    expect(reply).to_contain_text(text)  # the offline mode quotes what it was told
    expect(page.locator("#messages")).to_have_attribute("aria-busy", "false")
    expect(page.locator("#messages .caret")).to_have_count(0)  # no longer streaming
    return reply.inner_text()


def test_the_page_loads_without_console_errors(page: Page, hub: RunningHub) -> None:
    page.goto(hub.url)
    expect(page.locator("#user-name")).to_have_text(OWNER)  # signed in by the owner's link
    names = page.locator("#anima-list .nav-item-name")
    expect(names).to_have_text(["aria", "kai", "mika"])
    expect(page.locator("#channel-list .nav-item-name")).to_have_text(["general"])
    expect(page.locator("#conv-title")).not_to_have_text("AnimaHub")  # an Anima opened itself
    expect(page.locator("#offline-banner")).to_be_visible()
    expect(page.locator("#composer-input")).to_be_enabled()


def test_a_message_round_trips_and_stays(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    open_anima(page, hub, "aria")
    said = "The launch moves to Thursday after the review"
    reply = send(page, said)
    assert "offline mode" in reply and OWNER in reply
    screenshot("replied")

    page.reload()  # the hub kept both, not only this page
    expect(page.locator(".msg-mine")).to_have_count(1)
    expect(page.locator(".msg-mine").first).to_contain_text(said)
    expect(page.locator(".msg-anima .bubble").first).to_contain_text("offline mode")


def test_new_conversation_then_back_to_the_earlier_one(page: Page, hub: RunningHub) -> None:
    open_anima(page, hub, "kai")
    first = "Please look at the flaky build on the main branch"
    send(page, first)

    page.click("#new-conversation")
    expect(page.locator(".empty-title")).to_have_text("Start a conversation with kai")
    expect(page.locator(".msg-mine")).to_have_count(0)
    earlier = page.locator("#past-conversations")
    expect(earlier).to_be_visible()
    expect(earlier.locator("option:checked")).to_have_text("This new conversation")

    option = earlier.locator("option", has_text=first)
    expect(option).to_have_count(1)
    earlier.select_option(option.get_attribute("value"))
    expect(page.locator(".msg-mine")).to_have_count(1)
    expect(page.locator(".msg-mine").first).to_contain_text(first)


def test_earlier_conversations_are_found_by_what_was_said(page: Page, hub: RunningHub) -> None:
    open_anima(page, hub, "kai")
    send(page, "The kumquat shipment arrives on Tuesday")
    page.click("#new-conversation")
    send(page, "Who reviews the zeppelin design?")

    search = page.locator("#conversation-search")
    expect(search).to_be_visible()
    search.fill("KUMQUAT")
    earlier = page.locator("#past-conversations")
    expect(earlier.locator("option:checked")).to_have_text("1 conversation with “KUMQUAT”")
    expect(earlier.locator("option")).to_have_count(2)
    earlier.select_option(
        earlier.locator("option", has_text="kumquat shipment").get_attribute("value")
    )
    expect(page.locator(".msg-mine")).to_have_count(1)
    expect(page.locator(".msg-mine").first).to_contain_text("kumquat shipment")
    expect(search).to_have_value("")  # opening one ends the search

    search.fill("no such words anywhere")
    expect(earlier.locator("option:checked")).to_have_text(
        "No conversation with “no such words anywhere”"
    )
    expect(page.locator(".msg-mine").first).to_contain_text("kumquat shipment")  # still open


@pytest.mark.parametrize(
    ("path", "rendered"), [("/docs", ".swagger-ui .opblock"), ("/redoc", "h1")]
)
def test_api_docs_render_from_the_hub_alone(
    page: Page, hub: RunningHub, path: str, rendered: str
) -> None:
    requests: list[Request] = []
    page.on("request", lambda request: requests.append(request))
    page.goto(f"{hub.url}{path}")
    expect(page.locator(rendered).first).to_be_visible()
    page.wait_for_load_state("networkidle")

    origin = urlsplit(hub.url).netloc
    # data: and blob: URLs are made in the page (ReDoc's worker, inline images), not fetched.
    fetched = [r.url for r in requests if urlsplit(r.url).scheme in ("http", "https", "ws", "wss")]
    assert fetched, "the page fetched nothing: the request log is not working"
    elsewhere = [url for url in fetched if urlsplit(url).netloc != origin]
    assert elsewhere == [], f"{path} reached beyond the hub: {elsewhere}"


def test_a_second_person_sees_only_their_own_conversation(
    page: Page, browser: BrowserPages, hub: RunningHub, screenshot: Screenshot
) -> None:
    secret = "Keep this between us: the budget is 42 thousand"
    open_anima(page, hub, "mika")
    send(page, secret)
    owner_session = page.evaluate(
        "Object.entries(localStorage).find(([k]) => k.startsWith('animahub.session.')"
        " && k.endsWith('.mika'))[1]"
    )

    dana = browser.new_page("dana", owner=False)
    dana.goto(hub.sign_in_link("Dana"))
    expect(dana.locator("main")).to_contain_text("as Dana?")
    dana.get_by_role("button", name="Sign in").click()
    expect(dana.locator("#user-name")).to_have_text("Dana")
    expect(dana.locator("#signout-button")).to_be_visible()

    open_anima(dana, hub, "mika")
    expect(dana.locator(".empty-title")).to_have_text("Start a conversation with mika")
    expect(dana.locator("#past-conversations")).to_be_hidden()  # no conversations of hers yet
    asked = "What is on the roadmap for next quarter?"
    assert "Hello Dana" in send(dana, asked)

    dana.reload()  # the earlier-conversations list, as the hub has it for Dana
    options = dana.locator("#past-conversations option")
    expect(options).to_have_count(1)
    expect(options.first).to_contain_text(asked)

    # Even with the owner's conversation id in her browser, Dana gets nothing of it.
    dana.evaluate(
        """(owner) => {
          const key = Object.keys(localStorage).find(
            (k) => k.startsWith('animahub.session.') && k.endsWith('.mika'));
          localStorage.setItem(key, owner);
        }""",
        owner_session,
    )
    dana.reload()
    expect(dana.locator("#conv-title")).to_have_text("mika")
    expect(dana.locator(".empty-title")).to_have_text("Start a conversation with mika")
    expect(dana.locator("#messages")).not_to_contain_text(secret)
    expect(dana.locator("#past-conversations")).not_to_contain_text(secret)
    screenshot("dana-with-the-owners-conversation-id", page=dana)

    page.reload()  # the owner still has it: Dana's view is empty, not the hub's memory
    expect(page.locator(".msg-mine").first).to_contain_text(secret)


def test_a_paused_animas_notice_is_said_once(page: Page, hub: RunningHub) -> None:
    """The stream's error and the notice the hub delivers to the conversation are the same
    words: the page shows them once, as the Anima's message (the one a reload keeps)."""
    notice = "kai is paused; your message will be answered when an admin resumes it."
    open_anima(page, hub, "kai")
    # As the dashboard's Pause or `/anima pause kai` in a chat (the CLI has no pause).
    owner = hub.process.owner()
    httpx.post(f"{hub.url}/api/animas/kai/pause", headers=owner, timeout=30).raise_for_status()
    try:
        page.fill("#composer-input", "Are the build machines back up?")
        page.keyboard.press("Enter")
        expect(page.locator(".msg-anima .bubble", has_text=notice)).to_have_count(1)
        expect(page.locator(".msg-error")).to_have_count(0)
        expect(page.locator("#messages")).to_contain_text(notice)
        assert page.locator("#messages").inner_text().count(notice) == 1
    finally:
        resumed = httpx.post(f"{hub.url}/api/animas/kai/resume", headers=owner, timeout=30)
        resumed.raise_for_status()


def test_a_pasted_secret_shows_once_as_the_hub_keeps_it(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    """The hub keeps the message redacted; the page that sent it swaps its own copy for
    the kept one (known by its message id) instead of listing it a second time."""
    open_anima(page, hub, "mika")
    page.click("#new-conversation")
    page.fill("#composer-input", "my PIN is 55021987 for the side door")
    page.keyboard.press("Enter")
    mine = page.locator(".msg-mine")
    expect(page.locator(".msg-anima .bubble").last).to_contain_text("[REDACTED:password]")
    # The page asks for what it has not seen every 3 s; one ask must not add a copy.
    kept = "my PIN is [REDACTED:password] for the side door"
    expect(mine.first).to_contain_text(kept, timeout=10_000)
    page.wait_for_timeout(3_500)
    expect(mine).to_have_count(1)
    assert "55021987" not in page.locator("#messages").inner_text()
    screenshot("secret-kept-once")


def test_the_offline_banner_is_a_band_between_the_header_and_the_messages(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    """Not a card floating over the list's top edge, where it looked as if it covered the
    message scrolled beneath it: a band across the pane, the messages below it."""
    open_anima(page, hub, "aria")
    for n in range(3):
        send(page, f"Line {n} of a conversation long enough to scroll")
    page.locator("#messages").evaluate("(list) => { list.scrollTop = 40; }")
    header = page.locator(".conv-header").bounding_box()
    banner = page.locator("#offline-banner").bounding_box()
    messages = page.locator("#messages").bounding_box()
    assert header and banner and messages
    assert (banner["x"], banner["width"]) == (messages["x"], messages["width"])  # edge to edge
    assert abs(banner["y"] - (header["y"] + header["height"])) < 1
    assert abs(messages["y"] - (banner["y"] + banner["height"])) < 1
    screenshot("scrolled")


def test_a_phone_wide_page_never_scrolls_sideways(
    page: Page, hub: RunningHub, screenshot: Screenshot
) -> None:
    """The earlier-conversations selector is as wide as its longest title unless let shrink:
    at 420 px it ran off the screen, and the Anima's name beside it was cut to "a…"."""
    page.set_viewport_size({"width": 420, "height": 800})
    open_anima(page, hub, "mika")
    send(page, "A first conversation whose opening line is long enough to be a very wide title")
    page.click("#new-conversation")
    expect(page.locator("#past-conversations")).to_be_visible()
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 420, wide
    assert page.locator("#conv-title").evaluate("(h) => h.scrollWidth <= h.clientWidth")
    screenshot("narrow")
