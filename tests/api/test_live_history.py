"""WS /ws begins with what happened before it opened (issue 47: the dashboard's "What is
happening" was empty on every page load): a `history` frame after the hello, with the
latest notices the caller may see, each with its time, by the same rule as the live ones."""

from __future__ import annotations

import json
from typing import Any

from websockets.asyncio.client import connect

from hub.app import Hub
from hub.tasks.board import NewTask
from tests.api.test_live_ws import _http, _next, clock, served  # noqa: F401 (the fixtures)
from tests.api.test_people import TOKEN, say, token_for


async def _history(port: int, token: str) -> dict[str, Any]:
    async with connect(f"ws://127.0.0.1:{port}/ws") as socket:
        await socket.send(json.dumps({"token": token}))
        await _next(socket, "hello")
        # right after the hello: nothing is asked for, nothing needs to happen first
        frame: dict[str, Any] = json.loads(await socket.recv())
        assert frame["type"] == "history", frame
        return frame


def _seen(frame: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (n["type"], n.get("anima") or n.get("name") or str(n.get("id"))) for n in frame["notices"]
    ]


async def test_a_new_connection_hears_what_happened_before_within_its_rights(
    served: tuple[Hub, int],  # noqa: F811
) -> None:
    hub, port = served
    async with _http(port) as client:
        dana, bob = await token_for(client, "dana"), await token_for(client, "bob")
        await say(client.__class__(base_url=client.base_url, headers=bob), "hi", "b1")
        hub.tasks.create(NewTask("Write the report", "mika", "aria"), "mika")
        hub.anima_states.pause("kai", "Olivia")
        await say(client.__class__(base_url=client.base_url, headers=dana), "hello", "d1")
        hub.anima_states.resume("kai", "Olivia")

        admin = await _history(port, TOKEN)
        assert ("task", "1") in _seen(admin) and ("anima", "kai") in _seen(admin)
        assert len([n for n in admin["notices"] if n["type"] == "turn"]) >= 3  # bob's, dana's
        assert all(n["at"] for n in admin["notices"]) and admin["since"]
        ats = [n["at"] for n in admin["notices"]]
        assert ats == sorted(ats)  # oldest first

        mine = await _history(port, dana["Authorization"].removeprefix("Bearer "))
        own = {n["inbox_id"] for n in mine["notices"] if n["type"] == "turn"}
        every = {n["inbox_id"] for n in admin["notices"] if n["type"] == "turn"}
        assert len(own) == 1 and len(every) == 2 and own < every  # not bob's turn
        paused = [(n["name"], n["paused"]) for n in mine["notices"] if n["type"] == "anima"]
        assert paused == [("kai", True), ("kai", False)]  # an Anima's state is everyone's
        assert not [n for n in mine["notices"] if n["type"] == "task"]  # the board: admins'
