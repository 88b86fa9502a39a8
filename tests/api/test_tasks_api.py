"""The task board over the API, the CLI's path (hub/api/task_routes.py), and `/anima tasks`:
admins list, show with every step, and cancel; a person's own token is refused; in chat a
person sees the open tasks they asked for, an admin all of them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, PlatformUser
from hub.tasks import NewTask
from tests.api.test_linking import command
from tests.api.test_people import ADMIN, TOKEN, _started, web

DANA_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
DANA = PlatformUser("slack", "U0DANA", "Dana")
ROOT = PlatformUser("web", "root", "Root")


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await _started(
        home, ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC)), api_token=TOKEN
    )
    try:
        yield instance
    finally:
        await instance.stop()


def delegated(hub: Hub, requested_by: str | None = None, title: str = "Check the build") -> int:
    return hub.tasks.create(NewTask(title, "mika", "kai", requested_by=requested_by), "mika").id


async def test_admins_list_show_and_cancel_tasks(hub: Hub) -> None:
    first = delegated(hub)
    second = delegated(hub, title="Write release notes")
    async with web(hub) as client:
        listed = (await client.get("/api/tasks", headers=ADMIN)).json()
        assert [(t["id"], t["state"]) for t in listed] == [(second, "todo"), (first, "todo")]
        cancelled = await client.post(
            f"/api/tasks/{first}/cancel", json={"reason": "not needed"}, headers=ADMIN
        )
        assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
        again = await client.post(f"/api/tasks/{first}/cancel", json={}, headers=ADMIN)
        assert again.status_code == 409 and "cancelled" in again.text
        shown = (await client.get(f"/api/tasks/{first}", headers=ADMIN)).json()
        assert [(s["from"], s["to"], s["note"]) for s in shown["steps"]] == [
            (None, "todo", ""),
            ("todo", "cancelled", "not needed"),
        ]
        assert shown["steps"][1]["actor"] == "admin token:olivia"  # who, as the audit log has it
        todo = (await client.get("/api/tasks?state=todo", headers=ADMIN)).json()
        assert [t["id"] for t in todo] == [second]
        assert (await client.get("/api/tasks/999", headers=ADMIN)).status_code == 404


async def test_a_persons_own_token_cannot_see_the_board(hub: Hub) -> None:
    delegated(hub)
    async with web(hub) as client:
        made = await client.post("/api/tokens", json={"person": "Dana"}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        assert (await client.get("/api/tasks", headers=own)).status_code == 403
        assert (await client.post("/api/tasks/1/cancel", json={}, headers=own)).status_code == 403


async def test_anima_tasks_shows_a_person_what_they_asked_for_and_an_admin_all(
    hub: Hub,
) -> None:
    dana = hub.identity.resolve(DANA)
    delegated(hub, requested_by=dana.id, title="Book the venue")
    delegated(hub, title="Rotate the keys")
    mine = await command(hub, DANA_DM, DANA, "/anima tasks")
    assert "Book the venue" in mine and "Rotate the keys" not in mine
    admin = hub.identity.owner()
    owner_dm = Address("web", "local", admin.id, kind=AddressKind.DM)
    every = await command(hub, owner_dm, hub.identity.web_user(admin), "/anima tasks")
    assert "Book the venue" in every and "Rotate the keys" in every
