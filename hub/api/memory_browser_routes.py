"""The dashboard's memory browser over HTTP (docs/memory.md "Browsing it"): an Anima's
episode days, its knowledge and procedure notes, the graph of their [[wikilinks]], and the
notes it forgot.

A person may call all but `forgotten` (`hub/api/auth.py` `_PERSON_ROUTES`) and sees what
the Anima would recall in a DM with them (hub/views/mcp_tools.py `MemoryTools.visible`); the
owner and the admin token see every scope. Reading a day or a note is `GET .../read`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from fastapi import APIRouter, HTTPException

from hub.api.memory_routes import reader_of
from hub.api.people_routes import CallerDep, when
from hub.api.routes import HubDep
from hub.memory import browser
from hub.memory.notes import NOTE_DIRS

router = APIRouter(prefix="/api/memory")


@router.get("/{name}/episodes")
def episodes(name: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Each day with episodes the caller may see, latest first, and how many sections."""
    tools, reader = reader_of(hub, caller, name)
    days = browser.episode_days(tools.memory.anima_dir(name), partial(tools.visible, reader))
    return {"days": [{"day": day.isoformat(), "items": items} for day, items in days]}


@router.get("/{name}/notes")
def notes(
    name: str,
    hub: HubDep,
    caller: CallerDep,
    layer: Literal["knowledge", "procedures"] | None = None,
) -> dict[str, Any]:
    """The knowledge and procedure notes the caller may see (`layer`: one folder only),
    retired ones left out, each with the paths of the notes it links to."""
    tools, reader = reader_of(hub, caller, name)
    items = tools.memory.graph(name).items.values()
    shown = browser.notes(items, partial(tools.visible, reader), [layer] if layer else NOTE_DIRS)
    return {
        "notes": [
            {
                "path": note.path,
                "title": note.title,
                "layer": note.layer,
                "scope": note.scope,
                "updated_at": when(note.updated_at),
                "links": note.links,
            }
            for note in shown
        ]
    }


@router.get("/{name}/graph")
def graph(name: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Nodes (knowledge, procedures, and "missing" for a link to no note the caller can
    see) and directed edges, linking note to linked note."""
    tools, reader = reader_of(hub, caller, name)
    items = list(tools.memory.graph(name).items.values())
    drawn = browser.graph(items, partial(tools.visible, reader))
    return {"nodes": drawn.nodes, "edges": drawn.edges}


@router.get("/{name}/forgotten")
def forgotten(name: str, hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """The notes moved to archive/forgotten/, latest first; `POST .../restore` with a
    path brings one back. Admins only (the edge already refuses a person)."""
    tools, reader = reader_of(hub, caller, name)
    if not reader.admin:
        raise HTTPException(403, "forgotten notes are for the owner and admins")
    found = browser.forgotten(tools.memory.anima_dir(name), partial(tools.visible, reader))
    return {
        "items": [
            {"path": note.path, "archived_at": when(note.archived_at), "title": note.title}
            for note in found
        ]
    }
