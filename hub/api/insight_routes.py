"""The dashboard's charts over HTTP: `GET /api/stats` (hub/views/stats.py says what each series
counts). A person may call it (`hub/api/auth.py` `_PERSON_ROUTES`) and gets their own
messages and the memory a DM with them would recall; admins get the whole hub."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query

from hub.api.people_routes import CallerDep
from hub.api.routes import HubDep
from hub.views import stats
from hub.views.mcp_tools import MemoryTools, Reader

router = APIRouter(prefix="/api")


@router.get("/stats")
def hub_stats(
    hub: HubDep, caller: CallerDep, days: Annotated[int, Query(ge=1, le=stats.MAX_DAYS)] = 14
) -> dict[str, Any]:
    """Per UTC day, oldest first: messages per platform, turn seconds (p50, p95), memory per
    layer (cumulative) and notes forgotten; recall_ms over the priming calls memory made
    since the hub started (the latest 1000 for the percentiles)."""
    window = stats.Window.ending(hub.clock.now(), days)
    admin = caller.may_act_for_others
    traffic = stats.traffic(
        hub.db, window, None if admin else hub.identity.ids_of(caller.person_id)
    )
    answer: dict[str, Any] = {
        "days": [day.isoformat() for day in window.days],
        "messages": traffic.messages,
        "turn_seconds": {"p50": traffic.p50, "p95": traffic.p95},
        "recall_ms": {"p50": None, "p95": None, "count": 0},
        "memory": {"layers": {}, "per_day": {}},
        "forgotten": [0] * days,
    }
    memory = hub.memory
    if memory is None:  # memory off: nothing recalled, kept or forgotten
        return answer
    tools = MemoryTools(memory, hub.animas, hub.identity, hub.handoffs, hub.tasks)
    animas = hub.animas.names()

    def reader(anima: str) -> Reader:
        return Reader(anima, caller.person_id, caller.name, admin)

    def scopes_of(anima: str) -> tuple[str, ...] | None:
        return memory.linked(reader(anima).scope()).filter_scopes()

    visible = partial(tools.visible, reader(""))  # whose, not which Anima's
    answer["recall_ms"] = memory.priming_ms.summary()
    answer["memory"] = stats.memory_layers(memory, animas, scopes_of, window)
    answer["forgotten"] = stats.forgotten_per_day(memory, animas, visible, window)
    return answer
