"""The HTTP edge (hub/api/guard.py), in process: security headers on every response, CORS
closed unless configured, body limits counted as the bytes stream in, no cross-site or
DNS-rebinding access to the unauthenticated loopback hub, and the settings' checks."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from adapters.web.adapter import STATIC
from hub.api.dashboard_page import STATIC as DASHBOARD_STATIC
from hub.api.guard import DOCS_CSP, PAGE_CSP
from hub.settings import ConfigError
from tests.api.web_edge import (
    EVIL,
    LIMIT,
    assert_secured,
    chat,
    chunks,
    serving,
    stored,
)
from tests.conftest import make_settings

# One hub for the tests that need no setting of their own (a hub start is most of a test's
# time); each checks what it changed against a snapshot, so their order does not matter.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[httpx.AsyncClient]:
    home = tmp_path_factory.mktemp("web") / "home"
    home.mkdir()
    with pytest.MonkeyPatch.context() as env:  # as conftest's _clean_env, for this scope
        for key in [k for k in os.environ if k.startswith("ANIMAHUB_")]:
            env.delenv(key)
        async with serving(home) as (_hub, http):
            yield http


# security headers ------------------------------------------------------------------------


RESPONSES = [  # method, path, body, the status it gets
    ("GET", "/", None, 200),  # the web chat page
    ("GET", "/static/app.js", None, 200),
    ("GET", "/static/style.css", None, 200),
    ("GET", "/dashboard-assets/markdown.js", None, 200),  # the web chat loads it too
    ("GET", "/api/animas", None, 200),
    ("GET", "/api/system/health", None, 200),
    ("GET", "/openapi.json", None, 200),
    ("GET", "/no/such/page", None, 404),
    ("GET", "/static/missing.js", None, 404),
    ("GET", "/api/animas/nobody", None, 404),
    ("POST", "/api/chat/aria", {"message": ""}, 422),
    ("POST", "/api/chat/aria", "x" * (2 * LIMIT), 413),
    ("POST", "/api/chat/aria", "{}", 415),  # sent as text/plain
    ("DELETE", "/api/animas", None, 405),
    ("GET", "/boom", None, 500),
]


async def test_every_response_carries_the_security_headers(client: httpx.AsyncClient) -> None:
    for method, path, body, status in RESPONSES:
        if isinstance(body, str):
            headers = {"Content-Type": "text/plain"}
            response = await client.request(method, path, content=body, headers=headers)
        else:
            response = await client.request(method, path, json=body)
        assert response.status_code == status, (method, path)
        assert_secured(response)


async def test_a_chat_stream_carries_them_too(client: httpx.AsyncClient) -> None:
    async with client.stream("POST", "/api/chat/aria", json=chat()) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert_secured(response)
        await response.aread()


async def test_the_page_gets_a_strict_policy_and_only_the_docs_a_looser_one(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/")
    assert page.headers["content-security-policy"] == PAGE_CSP
    assert "unsafe-inline" not in PAGE_CSP and "script-src 'self'" in PAGE_CSP
    docs = await client.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-security-policy"] == DOCS_CSP
    api = await client.get("/api/animas")
    assert api.headers["content-security-policy"] == PAGE_CSP


async def test_the_docs_pages_load_everything_from_the_hub(client: httpx.AsyncClient) -> None:
    """/docs and /redoc work with no internet: every script, style and icon they name is
    served by the hub (FastAPI's defaults load them from a CDN: blank pages offline)."""
    for page in ("/docs", "/redoc"):
        html = (await client.get(page)).text
        assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
        assets += re.findall(r"""url: ?["']([^"']+)["']""", html)  # the OpenAPI document
        assert assets and not [a for a in assets if "//" in a], assets
        for asset in assets:
            assert (await client.get(asset)).status_code == 200, asset
    assert "cdn" not in DOCS_CSP and "https:" not in DOCS_CSP
    redoc = (await client.get("/docs-assets/redoc.standalone.js")).text
    assert "cdn.redoc.ly" not in redoc and "Redoc" in redoc  # its one outside image


async def test_the_page_as_it_is_needs_nothing_the_policy_refuses() -> None:
    """PAGE_CSP allows only same-origin scripts and styles: no inline <script> or <style>,
    no style="" or on*="" attributes, no external URL (headless Chromium confirms it:
    scripts/csp_check.py)."""
    html = (STATIC / "index.html").read_text()
    for script in re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S):
        # Its own script, and the hub's markdown renderer it shares with the dashboard.
        assert re.search(r'src="/(static|dashboard-assets)/', script[0]) and not script[1].strip()
    assert "<style" not in html
    assert not re.search(r"\s(style|on[a-z]+)\s*=", html)
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    sources = html + (STATIC / "app.js").read_text() + (STATIC / "style.css").read_text()
    sources += (DASHBOARD_STATIC / "markdown.js").read_text()
    assert "@import" not in sources and "eval(" not in sources and "new Function" not in sources
    # The app builds markup from strings: none of it may carry a style attribute either.
    assert not re.search(r"style=\\?[\"']", (STATIC / "app.js").read_text())


async def test_strict_transport_security_only_when_served_over_https(home: Path) -> None:
    async with serving(home, https=True) as (_hub, client):
        response = await client.get("/")
    assert response.headers["strict-transport-security"] == "max-age=31536000"


# CORS ------------------------------------------------------------------------------------


async def test_cors_is_closed_by_default(client: httpx.AsyncClient) -> None:
    preflight = await client.options(
        "/api/animas",
        headers={
            "Origin": EVIL,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code != 200
    assert not [h for h in preflight.headers if h.startswith("access-control-")]
    read = await client.get("/api/animas", headers={"Origin": EVIL})
    assert read.status_code == 200  # answered, but a browser keeps it from the other page
    assert "access-control-allow-origin" not in read.headers


async def test_cors_opens_to_exactly_the_configured_origins(home: Path) -> None:
    app_origin = "https://app.example.com"
    async with serving(home, cors_origins=[app_origin]) as (_hub, client):
        asked = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": ""}
        asked["Access-Control-Request-Headers"] = "authorization, content-type"
        ok = await client.options("/api/chat/aria", headers={"Origin": app_origin, **asked})
        other = await client.options("/api/chat/aria", headers={"Origin": EVIL, **asked})
        posted = await client.post(
            "/api/channels/general/posts",
            json={"text": "from the intranet", "user": "alice"},
            headers={"Origin": app_origin},
        )
        refused = await client.post(
            "/api/channels/general/posts", json={"text": "x"}, headers={"Origin": EVIL}
        )
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == app_origin
    assert "POST" in ok.headers["access-control-allow-methods"]
    assert "authorization" in ok.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in ok.headers
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    assert posted.status_code == 202
    assert posted.headers["access-control-allow-origin"] == app_origin
    assert refused.status_code == 403 and "access-control-allow-origin" not in refused.headers


# body limits -----------------------------------------------------------------------------


async def test_a_chunked_body_over_the_limit_is_refused_as_it_streams(
    client: httpx.AsyncClient,
) -> None:
    before = await stored(client)
    for path in (
        "/api/chat/aria",
        "/api/channels/general/posts",
        "/api/animas",
        "/api/memory/aria/write",
    ):
        response = await client.post(
            path, content=chunks(LIMIT + 1), headers={"Content-Type": "application/json"}
        )
        assert response.request.headers.get("transfer-encoding") == "chunked"
        assert "content-length" not in response.request.headers
        assert response.status_code == 413, path
        detail = f"request body over {LIMIT} bytes ([server] max_body_bytes)"
        assert response.json() == {"detail": detail}
        assert_secured(response)
    assert await stored(client) == before


async def test_a_declared_length_over_the_limit_is_refused_before_reading(
    client: httpx.AsyncClient,
) -> None:
    for path in ("/api/chat/aria", "/webhooks/nothing-here", "/"):
        response = await client.post(
            path, content=b"{" + b" " * LIMIT + b"}", headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 413, path
        assert "max_body_bytes" in response.json()["detail"]


async def test_a_chunked_body_within_the_limit_goes_through(client: httpx.AsyncClient) -> None:
    body = b'{"text": "' + b"y" * (LIMIT - 100) + b'", "user": "alice"}'

    async def stream() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 512):
            yield body[start : start + 512]

    response = await client.post(
        "/api/channels/general/posts",
        content=stream(),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 202


# cross-site requests and DNS rebinding ---------------------------------------------------


async def test_a_simple_cross_site_post_is_refused(client: httpx.AsyncClient) -> None:
    """What a form or fetch(no-cors) on another site can send without a CORS preflight."""
    before = await stored(client)
    body = json.dumps(chat()).encode()  # JSON text inside a "simple" request
    for content_type in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=b",
    ):
        headers = {"Content-Type": content_type}
        cross_site = await client.post(
            "/api/chat/aria", content=body, headers={**headers, "Origin": EVIL}
        )
        assert cross_site.status_code == 403, content_type
        assert cross_site.json() == {"detail": f"cross-site request from {EVIL} refused"}
        # Without Origin (an old browser, a stripping proxy) the content type refuses it.
        plain = await client.post("/api/chat/aria", content=body, headers=headers)
        assert plain.status_code == 415, content_type
        assert plain.json()["detail"].startswith("send application/json")
    assert await stored(client) == before


async def test_a_cross_site_post_without_a_body_is_refused(client: httpx.AsyncClient) -> None:
    """fetch(url, {method: "POST", mode: "no-cors"}) has no body, so no Content-Type."""
    for origin in (EVIL, "null", "http://localhost.evil.example"):
        refused = await client.post("/api/animas/aria/heartbeat", headers={"Origin": origin})
        assert refused.status_code == 403, origin
    own = await client.post("/api/animas/aria/heartbeat", headers={"Origin": "http://localhost"})
    assert own.status_code == 200  # the hub's own page, and clients that send no Origin
    assert (await client.post("/api/animas/aria/heartbeat")).status_code == 200


async def test_the_page_own_chat_request_goes_through(client: httpx.AsyncClient) -> None:
    headers = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    async with client.stream("POST", "/api/chat/aria", json=chat(), headers=headers) as reply:
        assert reply.status_code == 200
        assert '"type": "done"' in (await reply.aread()).decode()


async def test_a_foreign_host_is_refused_on_loopback(client: httpx.AsyncClient) -> None:
    """A page whose own name was rebound to 127.0.0.1 sends its own name as Host."""
    before = await stored(client)
    for host in (
        "evil.example",
        "evil.example:18500",
        "localhost.evil.example",
        "127.0.0.1.nip.io",
    ):
        for method, path in (
            ("GET", "/"),
            ("GET", "/api/animas"),
            ("POST", "/api/chat/aria"),
            ("POST", "/webhooks/line"),
        ):
            response = await client.request(method, path, json=chat(), headers={"Host": host})
            assert response.status_code == 400, (host, path)
            assert_secured(response)
    assert await stored(client) == before


async def test_loopback_hosts_are_accepted(client: httpx.AsyncClient) -> None:
    for host in ("localhost", "localhost:18500", "127.0.0.1:18500", "[::1]:18500", "LOCALHOST"):
        response = await client.get("/api/animas", headers={"Host": host})
        assert response.status_code == 200, host


async def test_allowed_hosts_are_accepted_and_their_pages_may_post(home: Path) -> None:
    async with serving(home, allowed_hosts=["hub.example.com", "*.corp.example"]) as (_, client):
        for host in ("hub.example.com", "chat.corp.example:443", "127.0.0.1:18500"):
            assert (await client.get("/", headers={"Host": host})).status_code == 200, host
        refused = await client.get("/", headers={"Host": "evil.example"})
        # Behind a proxy that sets its own Host, the page's origin is the public name.
        proxied = await client.post(
            "/api/channels/general/posts",
            json={"text": "through the proxy", "user": "alice"},
            headers={"Host": "127.0.0.1:18500", "Origin": "https://hub.example.com"},
        )
    assert refused.status_code == 400
    assert proxied.status_code == 202


async def test_off_loopback_the_token_guards_and_any_host_is_answered(home: Path) -> None:
    async with serving(home, host="0.0.0.0", api_token="t0ken") as (_, client):
        owner = client.headers.pop("Authorization")  # the data folder's key: the owner's
        page = await client.get("/", headers={"Host": "10.0.0.5:18500"})
        api = await client.get("/api/animas", headers={"Host": "10.0.0.5:18500"})
        admin = {"Host": "10.0.0.5:18500", "Authorization": "Bearer t0ken"}
        assert (await client.get("/api/animas", headers=admin)).status_code == 200
        admin["Authorization"] = owner
        assert (await client.get("/api/animas", headers=admin)).status_code == 200
    assert page.status_code == 200
    assert api.status_code == 401


# settings --------------------------------------------------------------------------------


async def test_hosts_and_origins_are_checked_and_normalised(home: Path) -> None:
    server = make_settings(
        home, server={"allowed_hosts": ["Hub.Example.COM", "::1", "*.corp.example"]}
    ).server
    assert server.allowed_hosts == ["hub.example.com", "[::1]", "*.corp.example"]
    origins = make_settings(home, server={"cors_origins": ["https://App.example.com:8443"]})
    assert origins.server.cors_origins == ["https://app.example.com:8443"]
    for bad in ("https://hub.example.com", "hub.example.com:443", "hub.*.com", "*"):
        with pytest.raises(ConfigError, match=r"server\.allowed_hosts"):
            make_settings(home, server={"allowed_hosts": [bad]})
    for bad in ("*", "https://app.example.com/", "app.example.com", "ftp://app.example.com"):
        with pytest.raises(ConfigError, match=r"server\.cors_origins"):
            make_settings(home, server={"cors_origins": [bad]})
    with pytest.raises(ConfigError, match=r"server\.max_body_bytes"):
        make_settings(home, server={"max_body_bytes": 10})
