"""The HTTP edge over real HTTP: webhook bodies counted as they stream in, uvicorn's own
limits as `animahub start` sets them, and mixed hostile and ordinary traffic at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adapters.telegram.webhook import SECRET_HEADER
from animahub_kit.contract import line_harness, slack_harness, telegram_harness
from animahub_kit.contract.harness import eventually
from animahub_kit.fakes.line_server import sign
from hub.api.server import MAX_HEAD_BYTES
from tests.api.web_edge import EVIL, LIMIT, assert_secured, chunks, serving, uvicorn_serving
from tests.conftest import owner_headers
from tests.sizes import size

# webhooks, over real HTTP ----------------------------------------------------------------

DEFAULT_LIMIT = 1024 * 1024  # the harnesses' hubs run with the default max_body_bytes


@contextlib.asynccontextmanager
async def platform_hub(platform: str, tmp_path: Path) -> AsyncIterator[str]:
    """A hub with one platform on its fake, served by uvicorn; yields the webhook's URL."""
    if platform == "line":
        async with line_harness.open_harness(tmp_path) as line:
            yield f"{line.hub_url}/webhooks/line"
    elif platform == "slack":
        async with slack_harness.open_harness(tmp_path) as slack:
            yield f"{slack.hub_url}/slack/events"
    else:
        async with telegram_harness.open_harness(tmp_path) as telegram:
            yield telegram.fake.webhook_target


WEBHOOK_HEADERS = {
    "line": {"X-Line-Signature": "bm90IGNoZWNrZWQgeWV0"},
    "slack": {"X-Slack-Signature": "v0=00", "X-Slack-Request-Timestamp": "1700000000"},
    "telegram": {SECRET_HEADER: telegram_harness.SECRET},
}


@pytest.mark.parametrize("platform", ["line", "slack", "telegram"])
async def test_a_webhook_body_over_the_limit_is_refused_as_it_streams(
    tmp_path: Path, platform: str
) -> None:
    async with platform_hub(platform, tmp_path) as url, httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            url,
            content=chunks(DEFAULT_LIMIT + 1, 64 * 1024),
            headers={"Content-Type": "application/json", **WEBHOOK_HEADERS[platform]},
        )
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        assert str(DEFAULT_LIMIT) in response.json()["detail"]
        assert_secured(response)
        foreign = await http.post(url, json={}, headers={"Host": "evil.example"})
        assert foreign.status_code == 400  # a proxy forwarding its Host needs allowed_hosts


async def test_a_chunked_webhook_within_the_limit_is_taken_in(tmp_path: Path) -> None:
    async with line_harness.open_harness(tmp_path) as line:
        raw = line.fake.payload([line.fake.text_event(line_harness.user_id("alice"), "hi")])

        async def stream() -> AsyncIterator[bytes]:
            for start in range(0, len(raw), 100):
                yield raw[start : start + 100]

        headers = {
            "Content-Type": "application/json",
            "X-Line-Signature": sign(line_harness.CHANNEL_SECRET, raw),
        }
        async with httpx.AsyncClient(timeout=30) as http:
            response = await http.post(
                f"{line.hub_url}/webhooks/line", content=stream(), headers=headers
            )
        assert response.status_code == 200
        assert_secured(response)


# uvicorn's own limits, as `animahub start` configures it ---------------------------------


def _owner_head(home: Path) -> str:
    """The owner's credential as raw header lines, for requests written by hand."""
    return "".join(f"{name}: {value}\r\n" for name, value in owner_headers(home).items())


async def _status_of_raw_get(port: int, home: Path, extra: str = "", *, ended: bool = True) -> int:
    """`ended=False`: the head's blank line is not sent (yet), as by a slow client. Sent
    with the owner's key (`home`'s owner.key): the loopback address is nobody."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    end = "\r\n" if ended else ""
    owner = _owner_head(home)
    head = f"GET /api/animas HTTP/1.1\r\nHost: 127.0.0.1\r\n{owner}{extra}{end}"
    writer.write(head.encode())
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    return int(status_line.split()[1])


async def _unfinished_post(
    port: int, home: Path
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A post whose body has not all arrived: the hub is serving it, waiting for the rest
    (the owner's, so it is let in and waits for its body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    owner = _owner_head(home)
    writer.write(
        b"POST /api/channels/general/posts HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + owner.encode()
        + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )
    await writer.drain()
    return reader, writer


async def test_uvicorn_bounds_connections_and_request_heads(home: Path) -> None:
    async with serving(home, max_connections=8) as (hub, _), uvicorn_serving(hub) as (server, port):
        assert await _status_of_raw_get(port, home) == 200
        # Idle connections hold no place: a new request is served, the oldest idle closed.
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(8)]
        assert await _status_of_raw_get(port, home) == 200
        assert await asyncio.wait_for(idle[0][0].read(), 30) == b""  # closed by the hub
        for _reader, writer in idle:
            writer.close()
        # Requests being served do hold theirs: past max_connections of them, 503.
        busy = [await _unfinished_post(port, home) for _ in range(8)]
        await eventually(lambda: len(server.server_state.tasks) == 8)
        assert await _status_of_raw_get(port, home) == 503
        for _reader, writer in busy:
            writer.close()
        await eventually(lambda: not server.server_state.connections)
        assert await _status_of_raw_get(port, home) == 200
        fits = f"X-Pad: {'a' * (MAX_HEAD_BYTES // 2)}\r\n"
        assert await _status_of_raw_get(port, home, fits) == 200
        # h11 holds at most MAX_HEAD_BYTES of a head that has not ended.
        too_big = f"X-Pad: {'a' * MAX_HEAD_BYTES}\r\n"
        assert await _status_of_raw_get(port, home, too_big, ended=False) == 400


# hostile and ordinary traffic at once ----------------------------------------------------

REQUESTS = size(ci=70, full=2800)  # one in seven is an ordinary channel post
POSTS = "/api/channels/general/posts"


def hostile(kind: int, text: str) -> tuple[str, str, dict[str, str], Any, int]:
    """method, path, headers, body, and the status it must get."""
    body = json.dumps({"text": text, "user": "mallory"})
    as_json = {"Content-Type": "application/json"}
    return [
        ("POST", POSTS, as_json, chunks(LIMIT + 1, 512), 413),  # chunked, over the limit
        ("POST", POSTS, as_json, body + " " * LIMIT, 413),  # declared length over it
        ("POST", POSTS, {**as_json, "Host": "rebound.evil.example"}, body, 400),
        ("POST", POSTS, {"Content-Type": "text/plain", "Origin": EVIL}, body, 403),
        ("POST", POSTS, {"Content-Type": "text/plain"}, body, 415),
        ("POST", POSTS, {**as_json, "Origin": "null"}, body, 403),
    ][kind]


async def test_mixed_hostile_and_ordinary_traffic(home: Path) -> None:
    """Concurrent requests over real HTTP, six kinds refused and ordinary channel posts:
    each refused one gets its status and leaves nothing, each ordinary one is kept once.
    All carry the owner's key: a hostile one is refused for what it is, not for want of it."""
    async with serving(home) as (hub, local), uvicorn_serving(hub) as (_server, port):
        url = f"http://127.0.0.1:{port}"
        gate = asyncio.Semaphore(16)
        kept: list[str] = []
        wrong: list[tuple[int, int, int]] = []

        async def one(http: httpx.AsyncClient, index: int) -> None:
            if index % 7 == 6:
                kept.append(f"post {index}")
                body = json.dumps({"text": kept[-1], "user": "alice"})
                request = ("POST", POSTS, {"Content-Type": "application/json"}, body, 202)
            else:
                request = hostile(index % 7, f"hostile {index}")
            method, path, headers, content, expected = request
            async with gate:
                answer = await http.request(method, path, content=content, headers=headers)
            if answer.status_code != expected:
                wrong.append((index, expected, answer.status_code))
            assert_secured(answer)

        async with httpx.AsyncClient(base_url=url, timeout=60, headers=owner_headers(home)) as http:
            await asyncio.gather(*(one(http, i) for i in range(REQUESTS)))
        posts = (await local.get(POSTS, params={"limit": 1000})).json()["posts"]
    assert wrong == []
    people = [p["text"] for p in posts if p["author_kind"] == "person"]
    assert sorted(people) == sorted(kept)  # every ordinary post once, no hostile one
