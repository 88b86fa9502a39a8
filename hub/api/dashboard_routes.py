"""The dashboard's view of the hub (docs/dashboard.md): Animas and what they are up to,
conversations on every platform, the audit log, and an admin's hand on paused Animas and
stuck deliveries.

A person may list the Animas and the conversations they took part in
(`hub/api/auth.py` `_PERSON_ROUTES`); everything else here is for the owner and the admin
token, and the edge answers a person 403 before these run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, HTTPException, Query

from hub.adapter import AmbiguousName, Caller, PlatformState
from hub.animas import Anima, effective_timezone
from hub.api.people_routes import CallerDep, actor_of, when
from hub.api.routes import AnimaOut, DeliveryOut, HubDep, anima_out
from hub.app import Hub
from hub.delivery.deliveries import Delivery, UnknownDelivery, WrongState
from hub.schedule.heartbeat import last_runs
from hub.schedule.scheduler import Fire, JobKind
from hub.schedule.slots import Skipped
from hub.views import audit, conversations

router = APIRouter(prefix="/api")
WHERE = "api"  # what the audit log says these actions came through
NEXT_RUNS = 5
SKIPPED_WITHIN = timedelta(days=1)


# Animas -------------------------------------------------------------------------------


@router.get("/dashboard/animas")
def dashboard_animas(hub: HubDep, caller: CallerDep) -> dict[str, Any]:
    """Every Anima with its state, schedule and today's turns, and every platform's state.

    A platform that is not up is down for every Anima: any of them may be mentioned or
    written to on any platform the hub runs. A person sees when a cron runs, not which
    (its key names its file and title: crons are the owner's and admins', docs/memory.md)."""
    platforms = hub.platforms.status()
    down = sorted(name for name, status in platforms.items() if status.state != PlatformState.UP)
    animas = hub.animas.all()
    paused = hub.anima_states.paused()
    beats = last_runs(hub.db)
    upcoming: dict[str, list[Fire]] = {}
    for fire in hub.scheduler.upcoming():
        upcoming.setdefault(fire.anima, []).append(fire)
    now = hub.clock.now()
    skipped = hub.scheduler.slots.skipped_since(now - SKIPPED_WITHIN)
    today = conversations.answered_since(
        hub.db, {a.name: _midnight(now, effective_timezone(a, hub.settings.hub)) for a in animas}
    )
    shown = []
    for anima in animas:
        runs = upcoming.get(anima.name, [])
        beat = next((f.at for f in runs if f.kind is JobKind.HEARTBEAT), None)
        last_at, outcome = beats.get(anima.name, (None, None))
        is_paused = anima.name in paused
        shown.append(
            {
                **anima_out(hub, anima, is_paused).model_dump(),
                "subordinates": [a.name for a in animas if a.spec.supervisor == anima.name],
                "state": "paused" if is_paused else ("platform down" if down else "running"),
                "platforms_down": down,
                "last_heartbeat": when(last_at),
                "last_heartbeat_outcome": outcome,
                "next_heartbeat": when(beat),
                "next_runs": [
                    {"key": _shown_key(f, caller), "kind": f.kind.value, "at": when(f.at)}
                    for f in runs[:NEXT_RUNS]
                ],
                "turns_today": today[anima.name],
                "skipped_runs": _skipped(skipped.get(anima.name)),
            }
        )
    return {
        "animas": shown,
        # state, reason (redacted by hub/delivery/platforms.py), since, next_retry_at, failures: the
        # page says why a platform is not up, and what happens next
        "platforms": {name: status.as_dict() for name, status in platforms.items()},
        "model": _model_state(hub, caller),
    }


def _model_state(hub: Hub, caller: Caller) -> dict[str, Any]:
    """Whether the models answer (hub/model/health.py), shown to everyone as a platform's
    state is; the provider's own error (it may name a host) only to the owner and admins."""
    report = hub.model_health.report()
    if not caller.may_act_for_others:
        for model in report["models"].values():
            model["detail"] = ""
    return report


def _shown_key(fire: Fire, caller: Caller) -> str:
    if fire.kind is JobKind.CRON and not caller.may_act_for_others:
        return f"cron:{fire.anima}"
    return fire.key


def _skipped(found: Skipped | None) -> dict[str, Any]:
    """Scheduled runs skipped in the last day: past a cron's grace, or while the hub was
    down (hub/schedule/slots.py); the latest one's time."""
    if found is None:
        return {"count": 0, "last_at": None}
    return {"count": found.count, "last_at": when(found.last_at)}


def _midnight(now: datetime, timezone: str) -> datetime:
    local = now.astimezone(ZoneInfo(timezone))
    return local.replace(hour=0, minute=0, second=0, microsecond=0).astimezone(UTC)


def _anima(hub: Hub, name: str) -> Anima:
    anima = hub.animas.get(name)
    if anima is None:
        raise HTTPException(404, f"no Anima named {name!r}")
    return anima


# async: the state of Animas lives on the hub's event loop, and resuming hands the held
# messages to its mailboxes.
@router.post("/animas/{name}/pause", response_model=AnimaOut)
async def pause(name: str, hub: HubDep, caller: CallerDep) -> AnimaOut:
    """As `/anima pause`: its messages are kept, its heartbeats and crons skipped."""
    anima = _anima(hub, name)
    hub.commands.pause(anima.name, actor_of(caller), WHERE, {"person": caller.person_id})
    return anima_out(hub, anima)


@router.post("/animas/{name}/resume", response_model=AnimaOut)
async def resume(name: str, hub: HubDep, caller: CallerDep) -> AnimaOut:
    """As `/anima resume`: the messages it held are answered now."""
    anima = _anima(hub, name)
    hub.commands.resume(anima.name, actor_of(caller), WHERE, {"person": caller.person_id})
    return anima_out(hub, anima)


# Conversations ------------------------------------------------------------------------


@router.get("/conversations")
def list_conversations(
    hub: HubDep,
    caller: CallerDep,
    anima: Annotated[str, Query(max_length=64)] = "",
    person: Annotated[str, Query(max_length=200)] = "",
    platform: Annotated[str, Query(max_length=32)] = "",
    channel: Annotated[str, Query(max_length=300)] = "",
    q: Annotated[str, Query(max_length=500)] = "",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict[str, Any]:
    """Conversations on every platform, the latest active first; a person's own only."""
    took_part = [] if caller.may_act_for_others else [hub.identity.ids_of(caller.person_id)]
    if person:
        try:
            found = hub.identity.find(person)
        except AmbiguousName:
            # Candidates (ids, accounts) are an admin's to see; a person's own view holds
            # nobody else's conversations anyway.
            if caller.may_act_for_others:
                raise
            found = None
        if found is None:
            return {"conversations": []}
        took_part.append(hub.identity.ids_of(found.id))
    filters = conversations.Filters(anima, platform, channel, q, tuple(took_part))
    listed = conversations.listing(hub.db, filters, limit, hub.identity.display_name)
    return {
        "conversations": [
            {
                "key": c.place.key,
                "platform": c.place.platform,
                "kind": c.place.kind,
                "place": c.place.label,
                "anima": c.anima,
                "people": list(c.place.people),
                "last_at": when(c.last_at),
                "last_text": c.last_text,
                "turns": c.turns,
            }
            for c in listed
        ]
    }


@router.get("/conversation")
def conversation(
    hub: HubDep,
    caller: CallerDep,
    key: Annotated[str, Query(min_length=1, max_length=500)],
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """A conversation's latest turns, oldest first. A person's own only: any other is 404,
    as if it did not exist."""
    if not _may_read(hub, caller, key):
        raise HTTPException(404, "no such conversation")
    found = conversations.transcript(hub.db, key, limit, hub.identity.display_name)
    if found is None:
        raise HTTPException(404, "no such conversation")
    return {
        "key": key,
        "place": found.place.label,
        "turns": [
            {
                "role": line.role,
                "author": line.author,
                "text": line.text,
                "at": when(line.at),
                "anima": line.anima,
            }
            for line in found.lines
        ],
    }


def _may_read(hub: Hub, caller: Caller, key: str) -> bool:
    if caller.may_act_for_others:
        return True
    return conversations.took_part(hub.db, key, hub.identity.ids_of(caller.person_id))


# Audit and deliveries -----------------------------------------------------------------


@router.get("/audit")
def audit_log(
    hub: HubDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    action: Annotated[str, Query(max_length=100)] = "",
) -> dict[str, Any]:
    """The audit log, latest first; `action` narrows to an action or its family."""
    return {
        "entries": [
            {
                "at": when(entry.at),
                "actor": entry.actor,
                "where": entry.where,
                "action": entry.action,
                "target": entry.target,
                "detail": entry.detail,
            }
            for entry in audit.entries(hub.db, limit, action)
        ]
    }


# async: a delivery's sender runs on the hub's event loop; whether it is sending one right
# now holds only there.
@router.post("/deliveries/{delivery_id}/retry", response_model=DeliveryOut)
async def retry_delivery(delivery_id: str, hub: HubDep, caller: CallerDep) -> DeliveryOut:
    """A failed delivery goes back to pending, due now, with all its attempts again."""
    return _changed(hub, lambda: hub.outbox.retry(delivery_id, actor_of(caller), WHERE))


@router.post("/deliveries/{delivery_id}/cancel", response_model=DeliveryOut)
async def cancel_delivery(delivery_id: str, hub: HubDep, caller: CallerDep) -> DeliveryOut:
    """A pending or failed delivery is cancelled: it is never sent."""
    return _changed(hub, lambda: hub.outbox.cancel(delivery_id, actor_of(caller), WHERE))


def _changed(hub: Hub, change: Callable[[], Delivery]) -> DeliveryOut:
    try:
        row = change()
    except UnknownDelivery as exc:
        raise HTTPException(404, str(exc)) from None
    except WrongState as exc:
        raise HTTPException(409, str(exc)) from None
    return DeliveryOut.of(row)
