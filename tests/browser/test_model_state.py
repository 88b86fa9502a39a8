"""A model that fails is in full view on the dashboard, against a real `animahub start`
whose model is the fake OpenAI server: down with its reason, since when and the fix, and
gone once the server is back (hub/model/health.py). Screenshots land in artifacts/."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from animahub_kit.fakes.openai_server import FakeOpenAI
from tests.browser.conftest import OWNER, BrowserPages, Screenshot, owner_link, sign_in_owner
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.browser


@pytest.fixture
def model_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.mark.timeout(360)  # two hubs start (the module's and this one) on shared cores
def test_a_model_that_is_down_is_shown_with_its_fix_until_it_is_back(
    browser: BrowserPages, tmp_path: Path, model_server: FakeOpenAI, screenshot: Screenshot
) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo", "--owner", OWNER).returncode == 0
    process = HubProcess(
        home,
        free_port(),
        ANIMAHUB_LLM__MODEL="openai/fake",
        ANIMAHUB_LLM__API_BASE=f"{model_server.url}/v1",
        ANIMAHUB_LLM__API_KEY="placeholder-key-for-a-local-server",
        ANIMAHUB_LLM__WORKERS="0",
        ANIMAHUB_LLM__HEALTH_CHECK_MIN_S="0.2",
        ANIMAHUB_LLM__HEALTH_CHECK_MAX_S="0.5",
        ANIMAHUB_RUNTIME__MAX_TURN_ATTEMPTS="1",
        ANIMAHUB_MEMORY__ENABLED="false",
    ).start()
    try:
        page = browser.new_page("model-down", owner=False)
        sign_in_owner(page, owner_link(home))  # this hub's owner, not the module hub's
        page.goto(f"{process.url}/dashboard#animas")
        expect(page.locator("#live")).to_have_text("live")
        banner = page.locator("#model-state")
        expect(banner).to_be_hidden()  # nothing has failed
        model_server.go_down()
        # A turn fails: the banner comes through the live feed, with no reload.
        # Not waited for: its reply is the failure; what the banner says is the test's.
        message = {"message": "are you there?", "conversation_id": "s1", "user": "alice"}
        turn = threading.Thread(
            target=httpx.post,
            args=(f"{process.url}/api/chat/aria",),
            kwargs={"json": message, "headers": process.owner(), "timeout": 120},
            daemon=True,
        )
        turn.start()
        # The hub imports litellm on its first call: tens of seconds on a loaded machine.
        expect(banner).to_be_visible(timeout=120_000)
        expect(banner).to_contain_text("Model openai/fake is down: unreachable")
        expect(banner).to_contain_text("Fix: check that the model server at [llm] api_base")
        expect(banner).to_contain_text(re.compile(r"since .+; next check"))
        expect(banner).to_have_class(re.compile("model-down"))
        screenshot("banner", page=page)
        model_server.come_back()
        expect(banner).to_be_hidden()  # the check found it back, and the page was told
        screenshot("back", page=page)
        # Closed before the hub stops: the page re-reads on the stop's notices, and a read
        # that finds the hub gone is a failed request.
        page.close()
        turn.join(timeout=60)
    finally:
        process.stop()
