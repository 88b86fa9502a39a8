"""Browser tests: a real hub (`animahub init --demo`, `animahub start`) and headless Chromium.

Fixtures, for any test module in tests/browser:

- `hub` (one per module): the running hub. `hub.url` is its base URL, `hub.cli.main(...)` runs
  `animahub` against it (fails the test on a non-zero exit), `hub.sign_in_link(name)` is
  `animahub people invite NAME`'s link, `hub.owner_link()` `animahub signin`'s (the owner's),
  `hub.process` the underlying `HubProcess` (`process.owner()`: the owner's key, for httpx).
- `page`: a Playwright page in a fresh browser context (empty cookies and local storage),
  signed in as the hub's owner with the owner's link, as the owner's own browser is: no page
  is the owner for being on this machine.
  The test fails if the page logs a console error, throws, a request fails, or a response
  is 4xx/5xx, unless the test allowed it (`browser.allow(regex)`). Every page's screenshot is
  saved at the end of the test, passed or failed, in $ANIMAHUB_ARTIFACTS (default
  artifacts/screenshots/ in the repository).
- `browser`: `browser.new_page(label)` opens another page in its own context, watched and
  screenshotted the same way, signed in as the owner (`owner=False`: not signed in; a second
  person then opens their own sign-in link).
- `screenshot`: `screenshot("after-send")` saves the `page` (or `page=other`) mid-test.

Playwright's sync API runs its own event loop only during its calls, so it does not clash
with pytest-asyncio (asyncio_mode = "auto" only touches `async def` tests and fixtures).
Chromium is Debian's (/usr/bin/chromium, scripts/chromium.sh): `playwright install` would
download a browser, which a closed network cannot, so it is never used.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    Playwright,
    Request,
    Response,
    sync_playwright,
)

from tests.e2e.hubproc import HubProcess, cli, free_port

REPO = Path(__file__).resolve().parents[2]
# Read at import: the root conftest's autouse fixture hides ANIMAHUB_* from each test.
CHROMIUM = os.environ.get("ANIMAHUB_CHROMIUM") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("ANIMAHUB_ARTIFACTS") or REPO / "artifacts" / "screenshots")
# As root (CI) Chromium refuses to start without --no-sandbox. The rest keep it off the
# network: a closed network refuses its background connections, many at a time.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TIMEOUT_MS = 15_000  # a step that takes longer is broken, not slow: fail within the test's 120 s
OWNER = "Olivia"
_LINK = re.compile(r"https?://\S+/signin/\S+")


@dataclass
class RunningHub:
    """The hub a module's tests share: its URL and its command line."""

    process: HubProcess

    @property
    def url(self) -> str:
        return self.process.url

    @property
    def home(self) -> Path:
        return self.process.home

    def cli(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        """`animahub ARGS` on this hub's data root (so against the running hub)."""
        result = cli(self.home, *args)
        if ok and result.returncode != 0:
            pytest.fail(f"animahub {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
        return result

    def sign_in_link(self, name: str) -> str:
        """A one-time sign-in link for `name`, as `animahub people invite NAME` prints it."""
        printed = self.cli("people", "invite", name).stdout
        found = _LINK.search(printed)
        assert found is not None, f"no sign-in link in:\n{printed}"
        return found.group(0)

    def owner_link(self) -> str:
        """A one-time sign-in link for the owner, as `animahub signin` prints it."""
        return owner_link(self.home)


def owner_link(home: Path) -> str:
    """`animahub signin`'s link for the hub on `home` (fails the test if there is none)."""
    result = cli(home, "signin")
    found = _LINK.search(result.stdout)
    assert result.returncode == 0 and found is not None, result.stdout + result.stderr
    return found.group(0)


def sign_in_owner(page: Page, link: str) -> None:
    """Open the owner's link: its page signs in by itself and opens the web chat."""
    page.goto(link)
    page.wait_for_url(re.compile(r"^https?://[^/]+/$"))
    page.locator("#user-name").filter(has_text=OWNER).wait_for()
    # The chat goes on loading (Animas, channels, the first conversation): a test navigating
    # away meanwhile cut that short, and the page remembered a channel as the last place.
    page.wait_for_load_state("networkidle")


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHub]:
    """A hub started as a user starts it, on a fresh data root and a free port."""
    home = tmp_path_factory.mktemp("browser") / "home"
    init = cli(home, "init", "--demo", "--owner", OWNER)
    assert init.returncode == 0, init.stderr
    process = HubProcess(home, free_port()).start()
    try:
        yield RunningHub(process)
    finally:
        process.stop()


def _launch(playwright: Playwright) -> Browser:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"Chromium not found at {CHROMIUM}: run scripts/chromium.sh (it installs Debian's "
            "chromium package), or set ANIMAHUB_CHROMIUM to a Chromium binary",
            pytrace=False,
        )
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """One headless Chromium per module: it starts in about a second, a hub in several."""
    with sync_playwright() as playwright:
        browser = _launch(playwright)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A page and what went wrong on it."""

    label: str
    page: Page
    problems: list[str] = field(default_factory=list)


@dataclass
class BrowserPages:
    """The pages a test opened, each in its own context, and their console and network."""

    chromium: Browser
    name: str
    hub: RunningHub
    pages: list[Watched] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)
    contexts: list[BrowserContext] = field(default_factory=list)

    def new_page(self, label: str = "", owner: bool = True) -> Page:
        context = self.chromium.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        watched = Watched(label or f"page{len(self.pages) + 1}", context.new_page())
        self._watch(watched)
        self.pages.append(watched)
        if owner:
            sign_in_owner(watched.page, self.hub.owner_link())
        return watched.page

    def allow(self, pattern: str) -> None:
        """A problem matching `pattern` (a regex) is expected and does not fail the test."""
        self.allowed.append(re.compile(pattern))

    def _watch(self, watched: Watched) -> None:
        note = watched.problems.append

        def console(message: ConsoleMessage) -> None:
            if message.type == "error":
                where = message.location.get("url", "")
                note(f"console error: {message.text} ({where})")

        def failed(request: Request) -> None:
            # ERR_ABORTED is the browser cancelling, not a failure: a fetch cut off by a
            # navigation, and (Chromium 156) one fetch in two whose streamed body a page
            # read to its end through a reader, the web chat's replies among them.
            if request.failure != "net::ERR_ABORTED":
                note(f"request failed: {request.method} {request.url}: {request.failure}")

        def response(answer: Response) -> None:
            if answer.status >= 400:
                note(f"HTTP {answer.status}: {answer.request.method} {answer.url}")

        watched.page.on("console", console)
        watched.page.on("pageerror", lambda exc: note(f"uncaught: {exc}"))
        watched.page.on("requestfailed", failed)
        watched.page.on("response", response)

    def problems(self) -> list[str]:
        return [
            f"{w.label}: {p}"
            for w in self.pages
            for p in w.problems
            if not any(a.search(p) for a in self.allowed)
        ]

    def screenshot(self, name: str, page: Page | None = None) -> Path:
        target = page or self.pages[0].page
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{self.name}-{_safe(name)}.png"
        target.screenshot(path=str(path), full_page=True)
        return path

    def finish(self) -> None:
        """The end-of-test screenshot of every page still open."""
        for watched in self.pages:
            if not watched.page.is_closed():
                self.screenshot(watched.label, watched.page)

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


_BROWSER = pytest.StashKey[BrowserPages]()


@pytest.fixture
def browser(
    chromium: Browser, hub: RunningHub, request: pytest.FixtureRequest
) -> Iterator[BrowserPages]:
    module = Path(request.node.path).stem
    opened = BrowserPages(chromium, _safe(f"{module}__{request.node.name}"), hub)
    request.node.stash[_BROWSER] = opened
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def page(browser: BrowserPages) -> Page:
    return browser.new_page("page")


class Screenshot(Protocol):
    def __call__(self, name: str, page: Page | None = None) -> Path: ...


@pytest.fixture
def screenshot(browser: BrowserPages) -> Screenshot:
    """`screenshot(name)` saves the test's first page (or `page=`) as <test>-<name>.png."""
    return browser.screenshot


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After the test body: screenshots, then fail the test (not its teardown) if a page
    logged an error. The screenshot also lets late events (a poll's error) arrive."""
    opened = item.stash.get(_BROWSER, None)
    try:
        result = yield
    except BaseException:
        if opened is not None:
            opened.finish()
            if problems := opened.problems():
                item.add_report_section("call", "browser", "\n".join(problems))
        raise
    if opened is not None:
        opened.finish()
        if problems := opened.problems():
            pytest.fail("the browser saw problems:\n" + "\n".join(problems), pytrace=False)
    return result
