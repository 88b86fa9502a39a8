"""The task board over the API, the CLI's path (hub/api/task_routes.py), and `/anima tasks`:
admins list, show with every step, and cancel; a person's own token is refused; in chat a
person sees the open tasks they asked for, an admin all of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, PlatformUser
from hub.store.models import TaskState
from hub.tasks.board import NewTask
from hub.tasks.manager_tools import parse_due
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
        owner = hub.identity.owner().id  # who, as the audit log has it
        assert shown["steps"][1]["actor"] == f"admin token:{owner}"
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


async def test_admins_delegate_and_retry_over_the_api(hub: Hub) -> None:
    async with web(hub) as client:
        bad = await client.post("/api/tasks", json={"to": "nobody", "title": "x"}, headers=ADMIN)
        assert bad.status_code == 422 and "no Anima named 'nobody'" in bad.text
        wrong = await client.post(
            "/api/tasks", json={"to": "kai", "title": "x", "due": "someday"}, headers=ADMIN
        )
        assert wrong.status_code == 422 and "is not a time" in wrong.text
        made = await client.post(
            "/api/tasks",
            json={"to": "kai", "title": "Check the build", "due": "in 2 hours"},
            headers=ADMIN,
        )
        assert made.status_code == 201, made.text
        task = made.json()
        assert (task["manager"], task["assignee"]) == ("mika", "kai")  # kai's supervisor
        assert task["origin"] == "web:local/general"  # mika's heartbeat channel: never nowhere
        assert task["due_at"].startswith("2026-12-01T11:00")  # the hub's clock, two hours on
        done = await _settled(hub, task["id"], "done")
        assert done["result"].startswith("No language model is configured")
        again = await client.post(f"/api/tasks/{task['id']}/retry", headers=ADMIN)
        assert again.status_code == 409 and "done: it cannot become todo" in again.text
        made = await client.post("/api/tokens", json={"person": "Dana"}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        refused = await client.post("/api/tasks", json={"to": "kai", "title": "x"}, headers=own)
        assert refused.status_code == 403


async def test_a_due_time_already_past_is_refused_and_today_is_not(hub: Hub) -> None:
    # The hub's clock: 2026-12-01 09:00 UTC.
    async with web(hub) as client:
        for past in ("2020-01-01", "2026-11-30", "2026-12-01T08:59"):
            refused = await client.post(
                "/api/tasks", json={"to": "kai", "title": "x", "due": past}, headers=ADMIN
            )
            assert refused.status_code == 422, past
            assert refused.json() == {
                "detail": f"due '{past}' is in the past (it is 2026-12-01 09:00 UTC now)"
            }
        today = await client.post(
            "/api/tasks", json={"to": "kai", "title": "x", "due": "2026-12-01"}, headers=ADMIN
        )
        assert today.status_code == 201, today.text
        assert today.json()["due_at"].startswith("2026-12-01T23:59")
    assert len(hub.tasks.listing()) == 1


def test_a_day_without_an_offset_is_the_hubs_day() -> None:
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # 23:00 on 30 November in Honolulu
    honolulu = ZoneInfo("Pacific/Honolulu")
    assert parse_due("2026-11-30", now, honolulu) == datetime(2026, 11, 30, 23, 59, tzinfo=honolulu)
    with pytest.raises(ValueError, match=r"in the past \(it is 2026-11-30 23:00 Pacific/Honolulu"):
        parse_due("2026-11-29", now, honolulu)
    with pytest.raises(ValueError, match="in the past"):
        parse_due("2026-11-30", now)  # in UTC, 30 November has ended


async def test_a_failed_task_is_run_again_on_retry(hub: Hub) -> None:
    task_id = delegated(hub)
    hub.tasks.move(task_id, TaskState.RUNNING, "kai")
    hub.tasks.move(task_id, TaskState.FAILED, "hub", "the model is down")
    async with web(hub) as client:
        again = await client.post(f"/api/tasks/{task_id}/retry", headers=ADMIN)
        assert again.status_code == 200 and again.json()["state"] == "todo"
        done = await _settled(hub, task_id, "done")
    assert done["attempts"] == 2


async def _settled(hub: Hub, task_id: int, state: str) -> dict[str, Any]:
    for _ in range(400):
        task = hub.tasks.get(task_id)
        if task.state.value == state:
            return {"result": task.result, "attempts": task.attempts}
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} is {hub.tasks.get(task_id).state}")
