"""Requests answered while hostile sockets hold connections (issue 41, class 8).

A hub served as `animahub start` serves it (uvicorn, the default `[server]` connection
settings), then `--hostile` sockets from a process of their own (tests/security/ws_flood.py):
a third live feeds signed in with one person's token, a third WebSocket handshakes that never
send a credential, a third raw TCP stalled mid-handshake, each connecting again when the hub
closes it. Meanwhile the owner (admin token) and another person make `--requests` GETs each,
one after another, every one on a new connection. Figures: status counts and latency
percentiles, without the flood and with it.

    .venv/bin/python bench/ws_exhaustion.py [--hostile 500] [--requests 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from hub import logs
from hub.clock import ManualClock
from tests.api.web_edge import uvicorn_serving
from tests.conftest import started_hub
from tests.security.ws_flood import flood_in_process, timed_requests

TOKEN = "bench-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
SOURCES = {
    "token": ("127.0.0.2",),
    "silent": ("127.0.0.3", "127.0.0.4", "127.0.0.5"),
    "stall": ("127.0.0.6", "127.0.0.7", "127.0.0.8"),
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def make_token(client: httpx.AsyncClient, person: str) -> str:
    made = await client.post("/api/tokens", json={"person": person}, headers=ADMIN)
    made.raise_for_status()
    token: str = made.json()["token"]
    return token


async def measure(port: int, person: dict[str, str], requests: int) -> dict[str, Any]:
    owner, other = await asyncio.gather(
        timed_requests(port, ADMIN, "/api/animas", requests),
        timed_requests(port, person, "/api/chat/mika/conversations", requests),
    )
    results = owner + other
    seconds = [s for _, s in results]
    return {
        "statuses": dict(Counter(str(status) for status, _ in results)),
        "p50_ms": round(statistics.median(seconds) * 1000, 1),
        "p99_ms": round(percentile(seconds, 0.99) * 1000, 1),
        "max_ms": round(max(seconds) * 1000, 1),
    }


async def run(hostile: int, requests: int) -> dict[str, Any]:
    third = hostile // 3
    counts = {"token": third, "silent": third, "stall": hostile - 2 * third}
    home = Path(tempfile.mkdtemp(prefix="ws-exhaustion-")) / "home"
    logs.configure(home, "WARNING")  # as `animahub start` does, without the INFO lines
    hub = await started_hub(
        home,
        ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC)),
        memory={"enabled": False},
        server={"api_token": TOKEN},
    )
    spawn = multiprocessing.get_context("spawn")
    ready, stop = spawn.Event(), spawn.Event()
    try:
        async with uvicorn_serving(hub) as (_server, port):
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
                mallory = await make_token(client, "mallory")
                person = {"Authorization": f"Bearer {await make_token(client, 'dana')}"}
            quiet = await measure(port, person, requests)
            flood = spawn.Process(
                target=flood_in_process, args=(port, mallory, counts, SOURCES, ready, stop)
            )
            flood.start()
            try:
                await asyncio.to_thread(ready.wait, 120)
                flooded = await measure(port, person, requests)
            finally:
                stop.set()
                await asyncio.to_thread(flood.join, 60)
    finally:
        await hub.stop()
    return {"hostile": counts, "requests_each": requests, "quiet": quiet, "flooded": flooded}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hostile", type=int, default=500)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args.hostile, args.requests))
    print(f"hostile sockets: {result['hostile']}; requests: {args.requests} each, owner and dana")
    print("| phase | statuses | p50 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|")
    for phase in ("quiet", "flooded"):
        r = result[phase]
        print(f"| {phase} | {r['statuses']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
