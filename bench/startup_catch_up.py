"""Start-up after a pause: how soon the hub answers, and how long its catch-up takes.

A first hub runs on a manual clock: `--animas` Animas (each with its 30-minute heartbeat)
and `--sessions` web conversations of one message each. It stops, the clock moves on 31
minutes, and a second hub starts on the same data: every heartbeat is due and every
conversation has been idle past `session_idle_minutes`, so that start finds one model call
per heartbeat and per session summary waiting. The model is the fake OpenAI server
(animahub_kit/fakes) answering each request after `--model-s`, through litellm on the hub's loop.

Measured on the second hub: `Hub.start()` (what the server's lifespan awaits before the
port opens), the first health answer after it, and how long health says `catching up`;
the model calls made while it did.

    .venv/bin/python bench/startup_catch_up.py [--animas 50] [--sessions 33] [--model-s 0.25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from animahub_kit.fakes.openai_server import FakeOpenAI
from hub.api.server import create_app
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.people.owner_key import ensure_owner_key
from hub.settings import Settings, load_settings


def settings_for(home: Path, model_url: str, scheduler: bool) -> Settings:
    return load_settings(
        home=home,
        llm={"model": "openai/bench", "api_base": f"{model_url}/v1", "api_key": "x", "workers": 0},
        scheduler={"enabled": scheduler},
        runtime={"person_messages_per_minute": 1e9, "person_burst": 10**9},
    )


async def first_run(
    home: Path, clock: ManualClock, model_url: str, animas: int, sessions: int
) -> None:
    hub = Hub(settings_for(home, model_url, scheduler=False), clock=clock)
    await hub.start()
    names = [f"a{n:03d}" for n in range(animas)]
    for name in names:
        hub.create_anima(name, "researcher", None)
    hub.scheduler.open()
    await hub.on_tick()  # plans every heartbeat, 30 minutes from now
    for n in range(sessions):
        clock.advance(timedelta(seconds=1))
        anima = names[n % len(names)]
        inbound = Inbound(
            event_id=str(uuid.uuid4()),
            address=Address("web", "local", f"dm:{anima}:p{n}", f"s{n}", AddressKind.DM),
            sender=PlatformUser("web", f"p{n}", f"Person {n}"),
            text=f"@{anima} the report for project {n} is due on Friday",
            mentions=(anima,),
            sent_at=clock.now(),
        )
        receipt = await hub.port.receive(inbound)
        events = [e async for e in hub.port.subscribe(receipt.inbox_id)]
        assert events[-1].type == "done", events[-1]
    await hub.stop()


async def second_run(home: Path, clock: ManualClock, fake: FakeOpenAI) -> dict[str, Any]:
    asked_before = len(fake.requests)
    hub = Hub(settings_for(home, fake.url, scheduler=True), clock=clock)
    began = time.perf_counter()
    await hub.start()
    started = time.perf_counter() - began
    transport = httpx.ASGITransport(app=create_app(hub))
    statuses: list[str] = []
    owner = {"Authorization": f"Bearer {ensure_owner_key(home)}"}  # no address is the owner
    async with httpx.AsyncClient(
        transport=transport, base_url="http://localhost", headers=owner
    ) as client:
        ask = time.perf_counter()
        first = (await client.get("/api/system/health")).json()
        first_answer = time.perf_counter() - ask
        statuses.append(first["status"])
        while statuses[-1] == "catching up":  # as a client would see it end
            await asyncio.sleep(0.05)
            statuses.append((await client.get("/api/system/health")).json()["status"])
        caught_up = time.perf_counter() - began
    calls = len(fake.requests) - asked_before
    await hub.stop()
    return {
        "start_s": round(started, 3),
        "first_health_ms": round(first_answer * 1000, 1),
        "first_status": statuses[0],
        "caught_up_s": round(caught_up, 2),
        "final_status": statuses[-1],
        "model_calls": calls,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as fake:
        home = Path(tmp)
        clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
        await first_run(home, clock, fake.url, args.animas, args.sessions)
        clock.advance(timedelta(minutes=31))
        fake.state.latency_s = args.model_s
        result = await second_run(home, clock, fake)
    return {"animas": args.animas, "sessions": args.sessions, "model_s": args.model_s, **result}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--animas", type=int, default=50, help="each has a heartbeat due")
    parser.add_argument("--sessions", type=int, default=33, help="idle conversations")
    parser.add_argument("--model-s", type=float, default=0.25, help="the model's answer time")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parsed = parser.parse_args()
    figures = asyncio.run(main(parsed))
    print(json.dumps(figures, indent=2))
    if parsed.json:
        parsed.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
