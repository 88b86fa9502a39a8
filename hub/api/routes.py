"""Hub-level REST routes: Animas, deliveries, system health."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, Field
from sqlalchemy.exc import DBAPIError

from hub import __version__
from hub.animas import Anima, effective_model
from hub.app import Hub
from hub.delivery.deliveries import Delivery
from hub.inbound import failed_updates
from hub.redaction.redact import fingerprint, redact_json
from hub.settings import configured_secrets
from hub.store.models import DeliveryRow
from hub.turns.retry import recent_failures

router = APIRouter(prefix="/api")


def get_hub(request: Request) -> Hub:
    hub: Hub = request.app.state.hub
    return hub


HubDep = Annotated[Hub, Depends(get_hub)]


class AnimaOut(BaseModel):
    name: str
    role: str
    title: str
    summary: str
    supervisor: str | None
    model: str
    paused: bool = False


class AnimaCreate(BaseModel):
    name: str = Field(min_length=1, max_length=32)
    role: str = Field(min_length=1, max_length=32)
    supervisor: str | None = None


def anima_out(hub: Hub, anima: Anima, paused: bool | None = None) -> AnimaOut:
    role = hub.animas.roles.get(anima.spec.role)
    return AnimaOut(
        name=anima.name,
        role=anima.spec.role,
        title=role.title if role else anima.spec.role,
        summary=role.summary if role else "",
        supervisor=anima.spec.supervisor,
        model=effective_model(anima, hub.settings.llm),
        paused=hub.anima_states.is_paused(anima.name) if paused is None else paused,
    )


@router.get("/animas", response_model=list[AnimaOut])
def list_animas(hub: HubDep) -> list[AnimaOut]:
    paused = hub.anima_states.paused()
    return [anima_out(hub, a, a.name in paused) for a in hub.animas.all()]


@router.post("/animas", response_model=AnimaOut, status_code=201)
def create_anima(body: AnimaCreate, hub: HubDep) -> AnimaOut:
    return anima_out(hub, hub.create_anima(body.name, body.role, body.supervisor))


class HeartbeatOut(BaseModel):
    outcome: str
    text: str
    posted: list[str]


@router.post("/animas/{name}/heartbeat", response_model=HeartbeatOut)
async def heartbeat(name: str, hub: HubDep) -> HeartbeatOut:
    """Run one heartbeat now, whatever its schedule or active hours say."""
    if hub.animas.get(name) is None:
        raise HTTPException(404, f"no Anima named {name!r}")
    outcome = await hub.agenda.heartbeat_now(name)
    return HeartbeatOut(outcome=outcome.line(), text=outcome.text, posted=list(outcome.posted))


@router.get("/animas/{name}", response_model=AnimaOut)
def get_anima(name: str, hub: HubDep) -> AnimaOut:
    anima = hub.animas.get(name)
    if anima is None:
        raise HTTPException(404, f"no Anima named {name!r}")
    return anima_out(hub, anima)


class DeliveryOut(BaseModel):
    id: str
    address: str
    kind: str
    anima: str
    status: str
    attempts: int
    error: str | None
    chunks: int
    created_at: str

    @classmethod
    def of(cls, row: Delivery | DeliveryRow) -> DeliveryOut:
        return cls(
            id=row.id,
            address=row.address,
            kind=row.kind,
            anima=row.anima,
            status=row.status,
            attempts=row.attempts,
            error=row.error,
            chunks=len(row.chunks),
            created_at=row.created_at.isoformat(),
        )


@router.get("/deliveries", response_model=list[DeliveryOut])
def list_deliveries(
    hub: HubDep,
    status: Annotated[str | None, Query(pattern="^(pending|sent|failed|cancelled)$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[DeliveryOut]:
    return [DeliveryOut.of(row) for row in hub.outbox.listing(status, limit)]


@router.get("/system/health")
def health(hub: HubDep) -> dict[str, Any]:
    try:
        deliveries: dict[str, int] | None = hub.outbox.counts()
        tasks: dict[str, int] | None = hub.tasks.counts()
        failed: dict[str, Any] | None = failed_updates.recent(hub.db, hub.clock.now())
        failed_turns: dict[str, Any] | None = recent_failures(hub.db, hub.clock.now())
        database_error = ""
    except DBAPIError as exc:
        deliveries = tasks = failed = failed_turns = None
        database_error = f"{type(exc.orig).__name__}: {exc.orig}"
    platforms = {name: status.as_dict() for name, status in hub.platforms.status().items()}
    parts = {name: status.as_dict() for name, status in hub.supervisor.status().items()}
    problems = [f"platform {name}" for name, p in platforms.items() if p["state"] != "up"]
    problems += [name for name, p in parts.items() if p["state"] != "running"]
    if database_error:
        problems.append("database")
    if failed is not None and failed["count"]:
        problems.append("failed updates")
    # A model degraded or down is `degraded` too: `model` says which, why and since when.
    problems += hub.model_health.problems()
    report: dict[str, Any] = {
        # degraded: the hub runs, but a platform is not connected, a part of it is failing
        # (and being restarted) or the database cannot be reached; `problems` says which,
        # `platforms`, `parts` and `database_error` say why. catching up: what fell due
        # while the hub was stopped (idle sessions, heartbeats) is still being run.
        "status": "degraded" if problems else ("catching up" if hub.catching_up else "ok"),
        "problems": problems,
        "parts": parts,
        "database_error": database_error,
        "version": __version__,
        "animas": hub.animas.names(),
        "adapters": sorted(hub.adapters),
        "platforms": platforms,
        "llm": hub.settings.llm.model or "offline",
        # Whether each configured model answers: state (ok, unchecked, degraded, down;
        # offline: none configured), reason, detail, fix, since, last success, next check.
        "model": hub.model_health.report(),
        # None: litellm runs in the hub process ([llm] workers = 0).
        "model_workers": hub.model_workers.status() if hub.model_workers else None,
        "database": hub.db.engine.dialect.name,
        "deliveries": deliveries,
        "failed_deliveries": deliveries.get("failed", 0) if deliveries is not None else None,
        "tasks": tasks,  # the task board's tasks by state
        # platform updates the hub could not handle in the last day, kept and skipped
        # (hub/inbound/failed_updates.py; the audit log's `update.failed` entries hold them)
        "failed_updates": failed,
        # messages given up on in the last day, the latest's error with its fix
        # (hub/turns/retry.py: a model that refused, or failed past the retry bound)
        "failed_turns": failed_turns,
        "mailboxes": hub.runtime.mailboxes.pending(),
        # messages from people sending faster than their rate, waiting for their slot
        "paced": hub.pacing.waiting,
        # memory written to markdown and not yet in the index (None: memory is off)
        "memory_backlog": hub.memory.backlog() if hub.memory is not None else None,
        # this worker (several share the database with [storage] shared), and its writes
        # refused because another had taken over the Anima, the address or the slot
        "worker": _worker(hub),
        # the credentials it runs with, by fingerprint: which token is in use, never its value
        "credentials": {
            key: fingerprint(value)
            for key, value in sorted(configured_secrets(hub.settings).items())
        },
    }
    # A part's or the database's error may quote a credential.
    clean: dict[str, Any] = redact_json(report)
    return clean


def _worker(hub: Hub) -> dict[str, Any]:
    held = hub.partitions.held() if hub.partitions is not None else None
    return {
        "name": hub.ownership.me,
        "partitions": len(held) if held is not None else None,  # None: the only worker
        "refused": {
            "guarded": hub.ownership.refused,  # turns, claims, retries under the lease
            "outbox": hub.outbox.refused,  # delivery progress after the address moved on
            "schedule": hub.scheduler.slots.refused,  # ends of runs taken over meanwhile
        },
    }
