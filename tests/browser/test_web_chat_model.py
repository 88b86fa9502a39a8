"""The web chat with a model that stalls (issue 47): headless Chromium, a real `animahub
start` whose model is the fake OpenAI server.

The page says it is still waiting for the model once no first token came for
`[llm] waiting_notice_s`; when the hub's first-token deadline cuts the call off, the page
shows the plain notice that the answer is delayed, once, and then the reply when the model
answers the retry, in the same bubble. After a reload, the history holds the notice once
and the reply.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from animahub_kit.fakes.openai_server import FakeOpenAI
from tests.browser.conftest import OWNER, RunningHub, Screenshot
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.browser

REPLY = "The review moved to Thursday."


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory, fake: FakeOpenAI) -> Iterator[RunningHub]:
    """This module's hub: the demo, with the fake as its model, short deadlines."""
    home = tmp_path_factory.mktemp("browser-model") / "home"
    init = cli(home, "init", "--demo", "--owner", OWNER)
    assert init.returncode == 0, init.stderr
    settings = {
        "ANIMAHUB_LLM__MODEL": "openai/fake",
        "ANIMAHUB_LLM__API_BASE": f"{fake.url}/v1",
        "ANIMAHUB_LLM__API_KEY": "x",
        "ANIMAHUB_LLM__WAITING_NOTICE_S": "1",
        "ANIMAHUB_LLM__FIRST_TOKEN_TIMEOUT_S": "6",
        "ANIMAHUB_RUNTIME__MODEL_RETRY_BASE_S": "0.2",
    }
    process = HubProcess(home, free_port(), **settings).start()
    try:
        yield RunningHub(process)
    finally:
        process.stop()


def test_a_stalled_model_is_waited_for_then_delayed_then_answered(
    page: Page, hub: RunningHub, fake: FakeOpenAI, screenshot: Screenshot
) -> None:
    fake.stall_next(after_chars=0)  # headers sent, then nothing: the deadline cuts it off
    fake.queue_reply("(never seen)")
    fake.queue_reply(REPLY)
    page.goto(f"{hub.url}/#anima/kai")
    expect(page.locator("#conv-title")).to_have_text("kai")
    page.fill("#composer-input", "When is the review?")
    page.keyboard.press("Enter")

    waiting = page.locator(".msg-anima .typing-note")
    expect(waiting).to_have_text("Still waiting for the AI model to answer…")
    screenshot("waiting-for-the-model")

    delayed = page.locator(".msg-error .error-text")
    # after the first-token deadline (6 s), on a machine that may be loaded
    expect(delayed).to_have_count(1, timeout=60_000)
    expect(delayed).to_contain_text("Your answer is delayed. The AI model is not answering")
    reply = page.locator(".msg-anima .bubble").last
    expect(reply).to_have_text(REPLY, timeout=60_000)  # the retry, once the fake answers
    expect(page.locator("#messages")).to_have_attribute("aria-busy", "false")
    expect(page.locator(".typing-note")).to_have_count(0)
    assert fake.stalls.cut_off == 1  # the stalled call was cancelled, not left open
    screenshot("delayed-then-answered")

    page.reload()  # what the hub kept: the notice once, then the reply
    expect(page.locator(".msg-anima .bubble").last).to_have_text(REPLY)
    expect(page.get_by_text("Your answer is delayed.")).to_have_count(1)
    screenshot("after-reload")
