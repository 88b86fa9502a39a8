"""The model's parts as the hub wires them: where litellm runs, the deadlines every call ends
by, the health every call reports to, and the cap on scheduled calls."""

from __future__ import annotations

from dataclasses import dataclass

from hub.animas import AnimaRegistry
from hub.clock import Clock
from hub.live import LiveFeed
from hub.model.client import LiteLLMCalls, ModelClient
from hub.model.deadlines import BoundedCalls
from hub.model.gate import LocalGate
from hub.model.health import ModelHealth, WatchedModel, configured_models, live_notices
from hub.model.pool import ModelWorkers
from hub.settings import Settings, configured_secrets
from hub.supervise import Backoff


@dataclass(frozen=True, slots=True)
class ModelParts:
    """`model`: what every model call goes through, reporting to `health`; `workers`: where
    litellm runs, or None for this event loop; `gate`: the hub-wide cap on scheduled calls
    (heartbeats, crons, consolidation)."""

    workers: ModelWorkers | None
    health: ModelHealth
    model: ModelClient
    gate: LocalGate


def build_model(
    settings: Settings, animas: AnimaRegistry, clock: Clock, live: LiveFeed
) -> ModelParts:
    llm = settings.llm
    # Where litellm runs: worker processes, or this event loop when workers = 0.
    workers = ModelWorkers(llm.workers, idle_s=llm.worker_idle_s or None) if llm.workers else None
    # Every model call ends by the [llm] deadlines, wherever litellm runs
    # (hub/model/deadlines.py).
    calls: ModelClient = BoundedCalls(workers or LiteLLMCalls(), llm)
    health = ModelHealth(
        lambda: configured_models(settings.llm.model, (a.spec.model for a in animas.all())),
        calls,
        clock.now,
        Backoff(llm.health_check_min_s, llm.health_check_max_s),
        configured_secrets(settings).values(),
    )
    health.on_change(live_notices(live))
    paced_by = settings.scheduler
    gate = LocalGate(paced_by.max_model_calls, clock, paced_by.rate_limit_pause_s)
    return ModelParts(workers, health, WatchedModel(calls, health), gate)
