"""Memory over HTTP: search, read and write an Anima's markdown memory, run a consolidation
stage and restore what was forgotten.

A person may search and read (`hub/api/auth.py` `_PERSON_ROUTES`), and gets what the Anima
would recall in a DM with them (hub/views/mcp_tools.py `Reader`); the rest is for the owner and
the admin token, and the edge answers a person 403 before it runs."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from hub.adapter import Caller
from hub.animas import effective_timezone
from hub.api.people_routes import CallerDep
from hub.api.routes import HubDep
from hub.app import Hub
from hub.memory.admin_search import recall, rows, scopes_and_layer, search_rows
from hub.memory.consolidation import Consolidator
from hub.memory.documents import UNREADABLE
from hub.memory.paths import MemoryPathError
from hub.memory.readable import AdminOnly
from hub.memory.service import MemoryService
from hub.views.mcp_tools import MemoryTools, Reader, item_lines, missing

router = APIRouter(prefix="/api/memory")


class WriteRequest(BaseModel):
    path: str = Field(min_length=1, max_length=300)
    content: str = Field(max_length=1_000_000)


class RestoreRequest(BaseModel):
    path: str = Field(min_length=1, max_length=300)


def memory_of(hub: Hub, name: str) -> MemoryService:
    if name not in hub.animas:
        raise HTTPException(404, f"no Anima named {name!r}")
    if hub.memory is None:
        raise HTTPException(409, "memory is disabled ([memory] enabled = false)")
    return hub.memory


def reader_of(hub: Hub, caller: Caller, name: str) -> tuple[MemoryTools, Reader]:
    """The caller as a reader of `name`'s memory, and the tools that know what they see."""
    memory = memory_of(hub, name)
    tools = MemoryTools(memory, hub.animas, hub.identity, hub.handoffs, hub.tasks)
    return tools, Reader(name, caller.person_id, caller.name, caller.may_act_for_others)


@router.get("/{name}/search")
async def search(
    name: str,
    hub: HubDep,
    caller: CallerDep,
    query: Annotated[str, Query(min_length=1, max_length=2000)],
    scope: str = "all",
    layer: str = "all",
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """`scope` is whose memory (privacy: all, shared, person:ID, channel:KEY; a person's
    search is always what a DM with them recalls, so only "all"); `layer` the kind (all,
    episodes, knowledge, procedures, skills, people). A layer's name given as `scope`
    (`?scope=knowledge`, as clients of the first API wrote it) is taken as the layer. Each
    result's `why` says in words why it matched, `signals` the same as codes."""
    if not query.strip():
        raise HTTPException(422, "the query is empty")
    tools, reader = reader_of(hub, caller, name)
    try:
        scopes, layer = scopes_and_layer(scope, layer)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    if reader.admin:
        found = await search_rows(
            tools.memory, name, query, scopes, layer, limit, hub.identity.display_name
        )
        return {"results": found}
    if scopes:
        raise HTTPException(403, "a person searches what a DM with them recalls: no scope")
    recalled = await recall(tools.memory, reader.scope(), query, layer, limit)
    return {"results": rows(recalled, query, hub.identity.display_name)}


@router.get("/{name}/read")
def read(name: str, path: str, hub: HubDep, caller: CallerDep) -> dict[str, str]:
    """The file as it is for an admin; for a person, the items of it a DM with them would
    recall (an episode day's sections under their headings, an archived day's too), 404
    when none, 403 for a file that is not memory items (identity.md, crons/*.md) or cannot
    be read as items with their scopes."""
    tools, reader = reader_of(hub, caller, name)
    try:
        if reader.admin:
            return {"path": path, "content": tools.memory.read(name, path)}
        content = "\n".join(item_lines(tools.visible_items(reader, path)))
    except MemoryPathError as exc:
        raise HTTPException(400, str(exc)) from None
    except (FileNotFoundError, IsADirectoryError):
        raise HTTPException(404, missing(reader, path)) from None
    except AdminOnly as exc:  # identity.md, crons, a file without scoped items
        raise HTTPException(403, str(exc)) from None
    except UNREADABLE as exc:
        raise HTTPException(422, f"{path!r} cannot be read: {exc}") from None
    return {"path": path, "content": content}


@router.post("/{name}/write")
async def write(name: str, body: WriteRequest, hub: HubDep) -> dict[str, Any]:
    memory = memory_of(hub, name)
    try:
        items = await memory.write(name, body.path, body.content)
    except (MemoryPathError, *UNREADABLE) as exc:  # nothing was written
        raise HTTPException(400, str(exc)) from None
    return {"path": body.path, "items": items}


@router.post("/rebuild")
async def rebuild_all(hub: HubDep, full: bool = False) -> dict[str, Any]:
    """Re-index every Anima's markdown (`animahub repair-rag` without `--anima`); `full=true`
    empties the whole index first, so the points of Animas that no longer exist go too."""
    if hub.memory is None:
        raise HTTPException(409, "memory is disabled ([memory] enabled = false)")
    if full:
        hub.memory.index.clear()
    return {"animas": {name: await hub.memory.rebuild(name) for name in hub.animas.names()}}


@router.post("/{name}/rebuild")
async def rebuild(name: str, hub: HubDep) -> dict[str, Any]:
    """Re-index the Anima's markdown (what `animahub repair-rag` does)."""
    memory = memory_of(hub, name)
    return {"anima": name, "items": await memory.rebuild(name)}


def _consolidator(hub: Hub, name: str) -> Consolidator:
    memory_of(hub, name)
    if hub.consolidator is None:
        raise HTTPException(409, "memory is disabled ([memory] enabled = false)")
    return hub.consolidator


def _timezone(hub: Hub, name: str) -> str:
    return effective_timezone(hub.animas.get(name), hub.settings.hub)


@router.post("/{name}/consolidate")
async def consolidate(
    name: str,
    hub: HubDep,
    stage: Literal["daily", "weekly", "monthly"],
    day: date | None = None,
    today: bool = False,
) -> dict[str, Any]:
    """Run one consolidation stage now, in the Anima's time. Daily distils every day not
    yet distilled up to yesterday; `today=true` includes today, `day=YYYY-MM-DD` is one day."""
    consolidator = _consolidator(hub, name)
    report = await consolidator.run(
        name, stage, hub.clock.now(), _timezone(hub, name), day=day, with_today=today
    )
    return report.as_json()


@router.post("/{name}/restore")
async def restore(name: str, body: RestoreRequest, hub: HubDep) -> dict[str, str]:
    """Bring back a forgotten note, e.g. "archive/forgotten/knowledge/x.md"."""
    consolidator = _consolidator(hub, name)
    try:
        restored = await consolidator.restore(name, body.path)
    except MemoryPathError as exc:
        raise HTTPException(400, str(exc)) from None
    except FileNotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except FileExistsError as exc:
        raise HTTPException(409, str(exc)) from None
    return {"path": restored}
