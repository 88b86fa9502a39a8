"""`animahub task list|show|cancel` from the command line, through an in-process hub's API
(no hub is running), as the CLI is used."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.app import Hub
from hub.cli.main import app
from hub.settings import load_settings
from hub.tasks.board import NewTask
from tests.api.test_people_cli import run


@pytest.fixture(autouse=True)
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A demo data folder, as `animahub init --demo` makes it, with no hub running."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    run("init", "--demo", "--owner", "Sam")


def test_task_list_show_and_cancel() -> None:

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


def test_task_delegate_with_no_hub_running_waits_for_the_hub() -> None:
    made = run("task", "delegate", "kai", "Check the build", "--due", "in 2 hours")
    assert "task 1 for kai (reports to mika): Check the build" in made
    assert "no hub is running: it starts when the hub does" in made
    listed = run("task", "list")
    assert "Check the build" in listed and "todo" in listed  # not run by the CLI's own hub
    refused = CliRunner().invoke(app, ["task", "retry", "1"])
    assert refused.exit_code == 1 and "task 1 is todo: it cannot become todo" in refused.output


def test_a_task_delegated_with_no_hub_running_says_it_starts_with_the_hub() -> None:
    """A CLI command's short-lived hub runs no tasks: the reply must not say "starts now"."""
    said = run("chat", "mika", "mika, have kai check the build on ci-2")
    assert "kai starts when the hub does, `animahub start`" in said, said
    assert "starts now" not in said
    assert "todo" in run("task", "list")


def test_a_refused_delegation_is_one_line_and_its_log_line_goes_to_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANIMAHUB_TASKS__MAX_PER_PAIR_PER_HOUR", "1")
    # As in a shell: no handler on the root logger (pytest adds its own capturing ones).
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    run("task", "delegate", "aria", "Draft the notes")
    refused = CliRunner().invoke(app, ["task", "delegate", "aria", "Draft the agenda"])
    assert refused.exit_code == 1
    assert refused.output == (
        "error: mika has handed aria 1 tasks in the last hour (limit 1); wait, or fold the "
        "work into an open task (HTTP 422)\n"
    )
    logged = (tmp_path / "home" / "logs" / "hub.log").read_text()
    assert "delegation mika → aria refused: mika has handed aria 1 tasks" in logged
