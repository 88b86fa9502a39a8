"""The task board over HTTP (hub/tasks.py): list, show, cancel. For the owner and admin
tokens only (`hub/api/auth.py`): a task's details are what a person asked a manager."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from hub.api.people_routes import CallerDep, actor_of, when
from hub.api.routes import HubDep
from hub.store.models import TaskState
from hub.tasks import TaskError, TaskView, UnknownTask

router = APIRouter(prefix="/api")


class CancelIn(BaseModel):
    reason: str = Field(default="", max_length=500)


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
