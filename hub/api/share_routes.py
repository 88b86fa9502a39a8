"""Sharing from the dashboard (hub/people/sharing.py): a person's own messages in an Anima's
episodes, and sharing one of them with the team.

Both are the person's own routes (`hub/api/auth.py` `_PERSON_ROUTES`): a caller only ever
sees and shares their own messages, whoever they are (the owner included), so no one
shares another's words from here.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, Field

from hub.api.memory_routes import memory_of
from hub.api.people_routes import CallerDep
from hub.api.routes import HubDep
from hub.commands.share import told
from hub.people.sharing import ShareRefused

router = APIRouter(prefix="/api/memory")


class ShareRequest(BaseModel):
    path: str = Field(min_length=1, max_length=300)  # the episode file, "episodes/DAY.md"
    id: str = Field(min_length=1, max_length=64)  # the section's item id (`GET .../mine`)


@router.get("/{name}/mine")
def mine(name: str, path: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """The caller's own messages in one episode file of `name` (their DM turns), each with
    its item id and whether it is shared."""
    memory_of(hub, name)
    person = hub.identity.by_id(caller.person_id)
    return {
        "messages": [
            {"id": m.item_id, "section": m.section, "text": m.words, "shared": m.shared}
            for m in hub.sharing.mine(person, name, path)
        ]
    }


# async: the copy is indexed by a task on the hub's event loop (not a worker thread).
@router.post("/{name}/share")
async def share(name: str, body: ShareRequest, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Share one of the caller's own messages with the team: 404 for anything else."""
    memory_of(hub, name)
    person = hub.identity.by_id(caller.person_id)
    try:
        done = hub.sharing.section(person, name, body.path, body.id)
    except ShareRefused as exc:
        raise HTTPException(404, str(exc)) from None
    return {"anima": done.anima, "id": done.item_id, "new": done.new, "told": told(done)}
