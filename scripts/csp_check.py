"""Load the web chat in headless Chromium under the hub's real headers and report every
Content-Security-Policy violation, console error and page exception (hub/api/guard.py).

    .venv/bin/python scripts/csp_check.py            # starts a demo hub on a free port
    .venv/bin/python scripts/csp_check.py --url http://127.0.0.1:18500 \
        --link "$(animahub signin | tail -1)"

It first opens the owner's sign-in link (the page signs in by itself; nobody is the owner
for being on the hub's machine), then the chat page, sends a message to the first Anima
(the reply streams back and is rendered as markdown), posts in #general, then opens /docs.
Exit code 1 if anything was refused by the policy. Needs `chromium` (Debian: apt-get
install -y chromium); it drives it over the DevTools protocol with aiohttp, which the lock
already has.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx

BIN = Path(sys.executable).parent
# Every policy violation lands here, whatever the console says about it.
RECORD = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"}` +
    ` (${e.sourceFile || location.pathname}:${e.lineNumber})`);
});
"""
CHAT = """
(async () => {
  const until = async (test) => { for (let i = 0; i < 200 && !test(); i++)
    await new Promise((r) => setTimeout(r, 50)); return test(); };
  await until(() => !document.getElementById("composer-input").disabled);
  const input = document.getElementById("composer-input");
  input.value = "Hello **there**, see `code` and https://example.com";
  document.getElementById("composer").requestSubmit();
  await new Promise((r) => setTimeout(r, 2000));  // the reply streams in
  const dm = document.getElementById("messages").innerText.slice(0, 300);
  location.hash = "#channel/general";
  await new Promise((r) => setTimeout(r, 500));
  await until(() => !document.getElementById("composer-input").disabled);
  input.value = "a channel post";
  document.getElementById("composer").requestSubmit();
  await new Promise((r) => setTimeout(r, 1500));
  return {dm, channel: document.getElementById("messages").innerText.slice(0, 200)};
})()
"""


class Page:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._ws:
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            else:
                self.events.append(data)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        await self._ws.send_json({"id": ident, "method": method, "params": params})
        reply: dict[str, Any] = await asyncio.wait_for(future, 60)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        return result.get("result", {}).get("value")

    def problems(self) -> list[str]:
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                entry = params["entry"]
                found.append(f"log {entry['source']}: {entry['text']} {entry.get('url', '')}")
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning"):
                texts = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
                found.append(f"console.{params['type']}: {' '.join(texts)}")
            elif method == "Runtime.exceptionThrown":
                found.append(f"exception: {params['exceptionDetails'].get('text')}")
        return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def demo_hub() -> Iterator[tuple[str, str]]:
    """A demo hub: its URL, and a sign-in link for its owner."""
    home = Path(tempfile.mkdtemp(prefix="csp-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANIMAHUB_")}
    env.update(ANIMAHUB_HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["ANIMAHUB_MEMORY__ENABLED"] = "false"
    animahub = str(BIN / "animahub")
    subprocess.run([animahub, "init", "--demo"], env=env, check=True, capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        [animahub, "start", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    owner = {"Authorization": f"Bearer {(home / 'owner.key').read_text().strip()}"}
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{url}/api/system/health", headers=owner).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        signin = subprocess.run([animahub, "signin"], env=env, check=True, capture_output=True)
        yield url, signin.stdout.decode().strip().splitlines()[-1]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        shutil.rmtree(home, ignore_errors=True)


@contextmanager
def chromium() -> Iterator[str]:
    """Headless Chromium; yields its DevTools port."""
    profile = tempfile.mkdtemp(prefix="csp-chromium-")
    proc = subprocess.Popen(
        [
            shutil.which("chromium") or "chromium",
            "--headless=new",
            "--no-sandbox",  # as root in a container
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        port = ""
        for line in proc.stderr:
            found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if found:
                port = found.group(1)
                break
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


async def visit(devtools: str, url: str, script: str | None) -> tuple[list[str], list[str], Any]:
    async with aiohttp.ClientSession() as http:
        async with http.put(f"http://127.0.0.1:{devtools}/json/new?about:blank") as response:
            target = await response.json(content_type=None)
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            page = Page(ws)
            for domain in ("Page", "Runtime", "Log"):
                await page.call(f"{domain}.enable")
            await page.call("Page.addScriptToEvaluateOnNewDocument", source=RECORD)
            await page.call("Page.navigate", url=url)
            for _ in range(200):
                if any(e.get("method") == "Page.loadEventFired" for e in page.events):
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the page's first API calls
            outcome = await page.evaluate(script) if script else None
            violations = await page.evaluate("window.__violations") or []
            return violations, page.problems(), outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--url", help="a running hub (default: start a demo hub)")
    parser.add_argument("--link", default="", help="its owner's link (`animahub signin`)")
    args = parser.parse_args()
    with chromium() as devtools:
        if args.url:
            return asyncio.run(check(devtools, args.url, args.link))
        with demo_hub() as (url, link):
            return asyncio.run(check(devtools, url, link))


async def check(devtools: str, url: str, link: str) -> int:
    async with httpx.AsyncClient() as http:
        print("headers of /:", dict((await http.get(f"{url}/")).headers))
    refused = 0
    # One browser profile: the sign-in's cookie and page key stay for the next pages.
    pages = [(link, None)] if link else []
    for page, script in (*pages, (f"{url}/", CHAT), (f"{url}/docs", None)):
        path = page.removeprefix(url).split("/signin/")[0] or "/signin/…"
        violations, problems, outcome = await visit(devtools, page, script)
        print(f"{path}: {len(violations)} CSP violations")
        if outcome:
            print("  page text:", json.dumps(outcome, ensure_ascii=False))
        for line in violations:
            print("  violation:", line)
        for line in problems:
            print("  console:", line)
        refused += len(violations)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
