"""`animahub task list|show|cancel` from the command line, through an in-process hub's API
(no hub is running), as the CLI is used."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hub.app import Hub
from hub.settings import load_settings
from hub.tasks import NewTask
from tests.api.test_people_cli import run


def test_task_list_show_and_cancel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    run("init", "--demo", "--owner", "Sam")

    async def delegate() -> int:
        hub = Hub(load_settings())
        await hub.start()
        try:
            new = NewTask("Check the build", "mika", "kai", "CI is red since noon")
            return hub.tasks.create(new, "mika").id
        finally:
            await hub.stop()

    task_id = asyncio.run(delegate())
    listed = run("task", "list")
    assert "Check the build" in listed and "todo" in listed
    assert "mika → kai" in run("task", "show", str(task_id))
    assert f"task {task_id} is cancelled" in run(
        "task", "cancel", str(task_id), "--reason", "fixed already"
    )
    shown = run("task", "show", str(task_id))
    assert "fixed already" in shown and "cancelled" in shown
    assert "no tasks" in run("task", "list", "--state", "todo")
