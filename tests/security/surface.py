"""What the forgery suite drives: one inbound route of a running hub.

A `Surface` is one route on a running hub (the contract harnesses: real adapter, real SDK,
fake platform, real HTTP): the forged, stale and malformed requests it must refuse
(`cases`), a byte-for-byte replay of a genuine request (`replay`), a genuine message that
proves the hub was processing meanwhile (`marker`), and what the platform received.

The statuses: a request that fails authentication is 401, as Slack's and Discord's docs
have it (Discord's endpoint check sends bad signatures and expects 401); Telegram and LINE
prescribe none (any non-2xx is a failed delivery, retried), so 401 there too. A request
that is authentic but not of the platform's shape is 400; the web API answers FastAPI's 422
for a body that fails validation (docs/architecture.md) and 404 for an unknown Anima.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from animahub_kit.contract.harness import Harness, eventually
from hub.app import Hub

AUTH = frozenset({401})
MALFORMED = frozenset({400})
SIX_MINUTES = 360  # past the five minutes Slack and Discord allow
MARKER = "marker after the forgeries"


@dataclass(frozen=True)
class Case:
    name: str
    send: Callable[[], Awaitable[int]]  # the HTTP status the hub answered
    expected: frozenset[int]


@dataclass(frozen=True)
class Replayed:
    event_id: str  # the inbox row both copies name
    reply: str | None  # what the one reply says (None: answered in the HTTP response)


class Surface(Protocol):
    route: str
    hub: Hub

    def cases(self) -> list[Case]: ...

    async def replay(self) -> Replayed:
        """Send one genuine request twice, byte for byte (checking both are accepted)."""
        ...

    async def marker(self) -> str:
        """Send a genuine message and wait for its reply; its event id."""
        ...

    def platform_received(self) -> list[str]:
        """Every text the bot sent to the platform (posts, command answers)."""
        ...


async def post(url: str, body: bytes, headers: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10.0) as http:
        return await http.post(url, content=body, headers=headers)


def sender(url: str, body: bytes, headers: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    async def send() -> int:
        return (await post(url, body, headers)).status_code

    return send


class HarnessSurface:
    """What the four platform surfaces share: a contract harness underneath."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.hub = harness.hub

    async def marker(self) -> str:
        sent = await self.harness.dm("carol", MARKER)
        await eventually(lambda: any(MARKER in p.text for p in self.harness.posted()))
        return sent.event_id

    def platform_received(self) -> list[str]:
        return [p.text for p in self.harness.posted()]
