"""Delegation end to end in one process (hub/tasks/delegation.py, hub/tasks/runner.py): a manager
hands a subordinate a task by tool, by command or in plain words; the task runs as the
assignee's own turn (through litellm against the fake OpenAI server, or offline); its report
reaches the conversation that asked once, and the manager's next turn and memory; a failing
assignee is retried, then escalated; lateness is told once; the limits refuse loops."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, PlatformUser
from hub.model.tool_registry import ToolContext
from hub.store.models import DeliveryRow, InboxItem, TaskState, Turn
from hub.tasks.board import NewTask, TaskView
from tests.api.test_chat_api import chat, sse_events
from tests.api.test_linking import command
from tests.conftest import started_hub

ROOT = PlatformUser("web", "root", "Root")
GENERAL = Address("web", "local", "general", kind=AddressKind.CHANNEL)
START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


async def settled(hub: Hub, task_id: int, *states: TaskState, within: float = 60) -> TaskView:
    """The task once it is in one of `states` (the runner works in the background)."""
    for _ in range(int(within / 0.05)):
        task = hub.tasks.get(task_id)
        if task.state in states:
            if hub.memory is not None:
                await hub.memory.drain()
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} is {hub.tasks.get(task_id).state}, not {states}")


def deliveries(hub: Hub, prefix: str) -> list[DeliveryRow]:
    with hub.db.session() as session:
        query = select(DeliveryRow).where(col(DeliveryRow.idempotency_key).startswith(prefix))
        return list(session.exec(query).all())


def manager_turns(hub: Hub, conversation: str) -> list[Turn]:
    with hub.db.session() as session:
        query = select(Turn).where(
            Turn.conversation == conversation, col(Turn.author).contains("(task")
        )
        return list(session.exec(query).all())


def episodes(hub: Hub, anima: str) -> str:
    folder = hub.settings.home / "animas" / anima / "episodes"
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md")))


def steps(task: TaskView) -> list[tuple[str | None, str, str]]:
    return [(s.from_state, s.to_state, s.actor) for s in task.steps]


def set_model(hub: Hub, anima: str, model: str) -> None:
    toml = hub.settings.home / "animas" / anima / "anima.toml"
    toml.write_text(toml.read_text().replace('model = ""', f'model = "{model}"'))
    hub.animas.load()


def mika(turn: str = "turn-1", **extra: Any) -> ToolContext:
    return ToolContext(
        anima="mika",
        person_id=extra.pop("person_id", None),
        person_is_admin=False,
        conversation=str(GENERAL),
        timezone="UTC",
        channel_key=GENERAL.channel_key,
        turn=turn,
        **extra,
    )


async def delegate(hub: Hub, ctx: ToolContext, **args: Any) -> str:
    return await hub.tools.call("delegate_task", json.dumps(args), ctx)


@pytest.fixture
async def offline(home: Path) -> AsyncIterator[Hub]:
    hub = await started_hub(home, hub={"admins": ["web:root"]}, tasks={"max_per_pair_per_hour": 3})
    try:
        yield hub
    finally:
        await hub.stop()


async def test_an_admin_delegates_by_command_and_the_offline_report_is_posted_once(
    offline: Hub,
) -> None:
    hub = offline
    answer = await command(hub, GENERAL, ROOT, "/anima delegate kai check the build")
    assert answer.startswith("Task 1 for kai: check the build. kai starts now")
    task = await settled(hub, 1, TaskState.DONE)
    root = hub.identity.resolve(ROOT)
    assert steps(task) == [
        (None, "todo", root.id),  # who asked
        ("todo", "running", "kai"),
        ("running", "done", "kai"),
    ]
    assert task.manager == "mika" and task.origin == str(GENERAL)  # kai's supervisor
    assert task.result.startswith("No language model is configured")
    posted = deliveries(hub, "task:1")
    assert [(d.address, d.kind.value, d.anima) for d in posted] == [(str(GENERAL), "report", "kai")]
    assert posted[0].text.startswith("**kai's report on task 1: check the build**")
    # The manager's next turn in #general has the report; both remember it.
    told = manager_turns(hub, str(GENERAL))
    assert [(t.anima, t.author) for t in told] == [("mika", "kai (task 1)")]
    assert "report on task 1" in episodes(hub, "kai")
    assert "report on task 1" in episodes(hub, "mika")
    listed = await command(hub, GENERAL, ROOT, "/anima tasks")
    assert listed == "No open tasks. The latest:\ntask 1 [done] check the build (mika → kai)"
    again = await command(hub, GENERAL, ROOT, "/anima delegate kai check the build")
    assert again.startswith("Task 2 for kai")  # a new command is a new request
    second = await settled(hub, 2, TaskState.DONE)
    # Its digest does not recall the first one's: an offline report holds nothing new.
    assert second.result.count("this report is the task as given") == 1


async def test_a_person_asks_the_manager_in_plain_words_offline(offline: Hub) -> None:
    from tests.api.test_people import web

    async with web(offline, owner=True) as client:
        response = await chat(client, "mika", message="mika, have kai check the build please")
    text = "".join(e.get("text", "") for e in sse_events(response.text))
    assert text.startswith("Done: task 1 for kai: check the build. kai starts now")
    task = await settled(offline, 1, TaskState.DONE)
    with offline.db.session() as session:
        asked = session.exec(select(InboxItem).where(InboxItem.anima == "mika")).one()
    assert task.origin == asked.address and task.requested_by == asked.person_id
    assert [d.address for d in deliveries(offline, "task:1")] == [asked.address]
    # Not asked of a subordinate: nothing is delegated, and the offline reply is as ever.
    async with web(offline, owner=True) as client:
        other = await chat(client, "mika", message="could you ask sam to look at it?")
    assert "Done:" not in other.text and len(offline.tasks.listing()) == 1


async def test_a_plain_request_naming_another_managers_anima_is_refused_offline(
    offline: Hub,
) -> None:
    from tests.api.test_people import web

    offline.create_anima("zed", "engineer", "kai")
    async with web(offline, owner=True) as client:
        asked = await chat(client, "mika", message="ask zed to fix the printer")
        text = "".join(e.get("text", "") for e in sse_events(asked.text))
        assert text.startswith(
            "I could not hand that on: zed is not a direct subordinate of mika; "
            "mika's direct subordinates: aria, kai"
        )
        # An Anima managing nobody says so, instead of "Noted".
        asked = await chat(client, "aria", message="please ask kai to fix the printer")
        text = "".join(e.get("text", "") for e in sse_events(asked.text))
        assert text.startswith(
            "I could not hand that on: kai is not a direct subordinate of aria; "
            "aria has no subordinates"
        )
    assert offline.tasks.listing() == []


async def test_the_limits_refuse_with_a_reason_and_a_log_line(
    offline: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    hub = offline
    hub.create_anima("zed", "engineer", "aria")
    caplog.set_level(logging.WARNING, logger="hub.tasks.delegation")
    assert "not a direct subordinate of mika" in await delegate(hub, mika(), to="zed", title="x")
    assert "mika's direct subordinates: aria, kai" in caplog.text
    assert "cannot delegate to itself" in await delegate(hub, mika(), to="mika", title="x")
    assert "no Anima named 'nobody'" in await delegate(hub, mika(), to="nobody", title="x")
    assert "not an address" in await delegate(
        hub, mika(), to="kai", title="x", report_to=["somewhere"]
    )
    # The same turn asking twice (run again after a crash) makes one task.
    first = await delegate(hub, mika("t1"), to="kai", title="Check the build")
    again = await delegate(hub, mika("t1"), to="kai", title="check  the build")
    assert first.startswith("task 1 for kai") and again.startswith("already delegated: task 1")
    await delegate(hub, mika("t2"), to="kai", title="Second")
    await delegate(hub, mika("t3"), to="kai", title="Third")
    capped = await delegate(hub, mika("t4"), to="kai", title="Fourth")
    assert "has handed kai 3 tasks in the last hour (limit 3)" in capped
    assert "delegation mika → kai refused" in caplog.text
    # Only Animas with subordinates have the tools.
    kai = ToolContext("kai", None, False, str(GENERAL), "UTC")
    assert "delegate_task" not in json.dumps(hub.tools.schemas(kai))
    assert "no tool named 'delegate_task'" in await delegate(hub, kai, to="aria", title="x")
    assert "delegate_task" in json.dumps(hub.tools.schemas(mika()))


async def test_depth_and_ping_pong(home: Path) -> None:
    hub = await started_hub(home, tasks={"max_depth": 2})
    try:
        hub.create_anima("zed", "engineer", "aria")
        hub.create_anima("yan", "engineer", "zed")
        root = await delegate(hub, mika("t1"), to="aria", title="Plan the release")
        assert root.startswith("task 1")
        in_task_1 = ToolContext("aria", None, False, "task:1", "UTC", turn="task:1", task_id=1)
        assert (await delegate(hub, in_task_1, to="zed", title="Draft it")).startswith("task 2")
        in_task_2 = ToolContext("zed", None, False, "task:2", "UTC", turn="task:2", task_id=2)
        deep = await delegate(hub, in_task_2, to="yan", title="Type it")
        assert "delegation depth limit (2) reached" in deep and "task 2 (aria → zed)" in deep
        # Two Animas that supervise each other (a cycle in anima.toml) cannot bounce work.
        toml = home / "animas" / "zed" / "anima.toml"
        toml.write_text(toml.read_text().replace('supervisor = "aria"', 'supervisor = "yan"'))
        hub.animas.load()
        yan = ToolContext("yan", None, False, "x", "UTC", turn="t9")
        assert (await delegate(hub, yan, to="zed", title="Ping")).startswith("task 3")
        zed = ToolContext("zed", None, False, "y", "UTC", turn="t10")
        back = await delegate(hub, zed, to="yan", title="Pong")
        assert "ping-pong: yan has handed zed task 3" in back
    finally:
        await hub.stop()


async def test_a_task_past_due_is_told_once(home: Path) -> None:
    clock = ManualClock(START)
    hub = await started_hub(home, clock, hub={"admins": ["web:root"]})
    try:
        await command(hub, GENERAL, ROOT, "/anima pause kai")  # so the task waits
        made = await delegate(hub, mika(), to="kai", title="Check the build", due="in 10 minutes")
        assert made.startswith("task 1")
        hub.task_runner.sweep()
        assert deliveries(hub, "task:1") == []
        clock.advance(timedelta(minutes=11))
        hub.task_runner.sweep()
        hub.task_runner.sweep()
        late = deliveries(hub, "task:1")
        assert [(d.idempotency_key, d.anima) for d in late] == [(f"task:1:late>{GENERAL}", "mika")]
        assert "Task 1 is past due: Check the build" in late[0].text
        assert hub.tasks.get(1).state is TaskState.TODO  # still on the board, waiting
        await command(hub, GENERAL, ROOT, "/anima resume kai")
        hub.task_runner.sweep()  # a resumed Anima takes up what waited
        await settled(hub, 1, TaskState.DONE)
    finally:
        await hub.stop()


async def test_a_task_cut_off_by_a_stop_runs_again_once(home: Path) -> None:
    hub = await started_hub(home)
    await delegate(hub, mika(), to="kai", title="Check the build")
    await settled(hub, 1, TaskState.DONE)
    # A second task, caught running when the hub stopped.
    hub.tasks.create(NewTask("Write notes", "mika", "kai", origin=str(GENERAL)), "mika")
    hub.tasks.move(2, TaskState.RUNNING, "kai")
    await hub.stop()
    hub = await started_hub(home)
    try:
        task = await settled(hub, 2, TaskState.DONE)
        assert [s.to_state for s in task.steps] == ["todo", "running", "todo", "running", "done"]
        assert task.steps[2].note == "the hub stopped during it"
        assert len(deliveries(hub, "task:1>")) == 1 and len(deliveries(hub, "task:2>")) == 1
        assert [s.to_state for s in hub.tasks.get(1).steps] == ["todo", "running", "done"]
    finally:
        await hub.stop()


async def test_a_running_task_that_no_run_holds_is_taken_up_again(offline: Hub) -> None:
    offline.tasks.create(NewTask("Write notes", "mika", "kai", origin=str(GENERAL)), "mika")
    offline.tasks.move(1, TaskState.RUNNING, "kai")  # as if its run had broken off
    offline.task_runner.sweep()
    task = await settled(offline, 1, TaskState.DONE)
    assert task.steps[2].note == "its run ended without a report"
    assert len(deliveries(offline, "task:1>")) == 1


async def test_cancelled_while_running_drops_the_report(offline: Hub) -> None:
    hub = offline
    await command(hub, GENERAL, ROOT, "/anima pause kai")
    await delegate(hub, mika(), to="kai", title="Check the build")
    assert "cancelled" in await hub.tools.call("cancel_task", '{"task_id": 1}', mika())
    theirs = ToolContext("aria", None, False, "x", "UTC")
    assert "no tool named" in await hub.tools.call("cancel_task", '{"task_id": 1}', theirs)
    await command(hub, GENERAL, ROOT, "/anima resume kai")
    hub.task_runner.sweep()
    await asyncio.sleep(0.2)
    assert hub.tasks.get(1).state is TaskState.CANCELLED and deliveries(hub, "task:1") == []
    listed = await hub.tools.call("check_tasks", '{"state": "all"}', mika())
    assert listed == "task 1 [cancelled] Check the build (kai)"


# --------------------------------------------------------------------- with a model


@pytest.fixture
async def modelled(home: Path, fake_openai: Any) -> AsyncIterator[Hub]:
    hub = await started_hub(
        home,
        llm={"api_base": f"{fake_openai.url}/v1", "api_key": "x", "workers": 0},
        tasks={"max_attempts": 2, "retry_delay_s": 0},
    )
    for name in ("mika", "aria", "kai"):
        set_model(hub, name, f"openai/{name}")
    try:
        yield hub
    finally:
        await hub.stop()


async def test_the_model_delegates_and_the_report_comes_back(
    modelled: Hub, fake_openai: Any
) -> None:
    from tests.api.test_people import web

    hub = modelled
    fake_openai.queue_tool_call(
        "delegate_task", {"to": "kai", "title": "Check the build"}, model="mika"
    )
    fake_openai.queue_reply("I've asked kai to check it.", model="mika")
    fake_openai.queue_reply("The build is green: 412 tests passed.", model="kai")
    async with web(hub, owner=True) as client:
        first = await chat(client, "mika", message="mika, have kai check the build")
        assert "I've asked kai" in "".join(e.get("text", "") for e in sse_events(first.text))
        task = await settled(hub, 1, TaskState.DONE)
        assert task.result == "The build is green: 412 tests passed."
        asked = [r for r in fake_openai.requests if r["model"] == "kai"]
        assert len(asked) == 1 and "Task 1 from mika: Check the build" in json.dumps(asked[0])
        report = deliveries(hub, "task:1")
        assert len(report) == 1 and report[0].address == task.origin
        # mika's next turn in that conversation sees kai's report in its history.
        fake_openai.queue_reply("Kai says it is green.", model="mika")
        await chat(client, "mika", message="so, is it green?")
    body = json.dumps([r for r in fake_openai.requests if r["model"] == "mika"][-1]["messages"])
    assert "kai (task 1)" in body and "412 tests passed" in body


async def test_a_failing_assignee_is_retried_then_escalated(
    modelled: Hub, fake_openai: Any
) -> None:
    hub = modelled
    for _ in range(2):
        fake_openai.fail_next(500, None, "the model is down", model="kai")
    made = await delegate(hub, mika(person_id=None), to="kai", title="Check the build")
    assert made.startswith("task 1")
    task = await settled(hub, 1, TaskState.FAILED)
    assert [s.to_state for s in task.steps] == ["todo", "running", "todo", "running", "failed"]
    assert "attempt 1 failed" in task.steps[2].note
    told = deliveries(hub, "task:1")
    assert [(d.idempotency_key, d.kind.value, d.anima) for d in told] == [
        (f"task:1:failed>{GENERAL}", "notice", "mika")
    ]
    assert "Task 1 failed: Check the build" in told[0].text and "tried 2 times" in told[0].text
    assert [t.author for t in manager_turns(hub, str(GENERAL))] == ["kai (task 1)"]
    assert "Task 1 failed" in episodes(hub, "mika")
