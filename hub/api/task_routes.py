"""The task board over HTTP (hub/tasks/board.py): list, show, delegate, cancel, retry. For the
owner and admin tokens only (`hub/api/auth.py`): a task's details are what a person asked a
manager."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from hub.api.people_routes import CallerDep, actor_of, when
from hub.api.routes import HubDep
from hub.store.models import TaskState
from hub.tasks.addressing import Asker
from hub.tasks.board import TaskError, TaskView, UnknownTask
from hub.tasks.delegation import Request
from hub.tasks.manager_tools import parse_due

router = APIRouter(prefix="/api")


class CancelIn(BaseModel):
    reason: str = Field(default="", max_length=500)


class DelegateIn(BaseModel):
    to: str = Field(min_length=1, max_length=64)
    title: str = Field(min_length=1, max_length=200)
    details: str = Field(default="", max_length=20_000)
    due: str = Field(default="", max_length=64, description="ISO 8601, or 'in 2 hours'")
    report_to: list[str] = Field(default_factory=list, max_length=20)
    origin: str = Field(
        default="",
        max_length=500,
        description="where the report goes first; default: the manager's heartbeat channel",
    )


@router.get("/tasks")
def tasks(
    hub: HubDep, state: TaskState | None = None, assignee: str | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """Tasks newest first; `state` and `assignee` narrow them."""
    states = (state,) if state is not None else ()
    found = hub.tasks.listing(states=states, assignee=assignee, limit=max(1, min(limit, 500)))
    return [shown(task) for task in found]


@router.get("/tasks/{task_id}")
def task(task_id: int, hub: HubDep) -> dict[str, Any]:
    """One task with every transition it went through."""
    try:
        found = hub.tasks.get(task_id)
    except UnknownTask as exc:
        raise HTTPException(404, str(exc)) from None
    return {
        **shown(found),
        "steps": [
            {
                "at": when(step.at),
                "actor": step.actor,
                "from": step.from_state,
                "to": step.to_state,
                "note": step.note,
            }
            for step in found.steps
        ],
    }


# async: starting a task puts it in a mailbox, on the hub's event loop (not a worker thread).
@router.post("/tasks", status_code=201)
async def delegate(body: DelegateIn, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Give an Anima a task for its supervisor, as `/anima delegate` does; it starts at once."""
    try:
        due = parse_due(body.due, hub.clock.now(), ZoneInfo(hub.settings.hub.timezone))
        # The one check of where the hub posts (hub/tasks/addressing.py): only the owner and the
        # admin token reach this route, so it passes, and each target is audited.
        asker = Asker(caller.person_id, caller.may_act_for_others, anima=body.to)
        if body.origin:
            hub.addressing.check(asker, [body.origin])
        manager = hub.delegation.manager_of(body.to)
        made = hub.delegation.delegate(
            Request(
                manager=manager,
                to=body.to,
                title=body.title,
                details=body.details,
                due_at=due,
                report_to=tuple(body.report_to),
                asker=asker,
                requested_by=caller.person_id,
                origin=body.origin or hub.delegation.home_channel(manager, body.to),
                by_admin=True,
            ),
            actor=actor_of(caller),
        )
    except (TaskError, ValueError) as exc:
        raise HTTPException(422, str(exc)) from None
    hub.people.audit(caller, "task.delegate", str(made.task.id))
    return shown(made.task)


@router.post("/tasks/{task_id}/retry")
async def retry(task_id: int, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Put a failed task back on the board; it starts at once."""
    try:
        again = hub.tasks.move(task_id, TaskState.TODO, actor_of(caller), "tried again")
    except UnknownTask as exc:
        raise HTTPException(404, str(exc)) from None
    except TaskError as exc:
        raise HTTPException(409, str(exc)) from None
    hub.task_runner.start(again)
    hub.people.audit(caller, "task.retry", str(task_id))
    return shown(again)


@router.post("/tasks/{task_id}/cancel")
def cancel(task_id: int, body: CancelIn, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    try:
        done = hub.tasks.move(task_id, TaskState.CANCELLED, actor_of(caller), body.reason)
    except UnknownTask as exc:
        raise HTTPException(404, str(exc)) from None
    except TaskError as exc:
        raise HTTPException(409, str(exc)) from None
    hub.people.audit(caller, "task.cancel", str(task_id))
    return shown(done)


def shown(task: TaskView) -> dict[str, Any]:
    return {
        "id": task.id,
        "title": task.title,
        "details": task.details,
        "manager": task.manager,
        "assignee": task.assignee,
        "requested_by": task.requested_by,
        "origin": task.origin,
        "state": task.state.value,
        "attempts": task.attempts,
        "depth": task.depth,
        "parent": task.parent_id,
        "due_at": when(task.due_at),
        "report_to": list(task.report_to),
        "result": task.result,
        "created_at": when(task.created_at),
        "updated_at": when(task.updated_at),
    }
