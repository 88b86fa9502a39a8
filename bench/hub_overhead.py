"""Hub overhead per message, from ingress to a sent delivery.

The language model is litellm with `mock_response` (no network, no model time), so what is
measured is the hub itself: dedup and persist, identity, routing, working memory, the turn
log, the outbox and the adapter send. Runs on SQLite unless --database-url says otherwise.

    .venv/bin/python bench/hub_overhead.py [--messages 2000] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from collections.abc import AsyncIterator

from adapters.web import WebAdapter
from hub.app import Hub
from hub.delivery.deliveries import Delivery
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.model.client import LiteLLMCalls
from hub.model.pool import ModelWorkers
from hub.model.tool_registry import builtin_tools
from hub.settings import load_settings
from hub.turns.llm import LiteLLMResponder, TurnContext
from hub.turns.offline import OfflineResponder
from hub.turns.runtime import Responders


class TimedResponder:
    """The real litellm responder, with the time spent inside it recorded per turn, so the
    hub's own overhead can be told apart from litellm's (its mock stream sleeps per chunk)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spent: dict[str, float] = {}

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        spent = 0.0
        pieces = self.inner.stream(ctx)
        while True:
            start = time.perf_counter()
            try:
                piece = await anext(pieces)
            except StopAsyncIteration:
                spent += time.perf_counter() - start
                break
            spent += time.perf_counter() - start
            yield piece
        self.spent[ctx.tools.conversation] = spent  # one turn at a time per conversation


class InstantResponder:
    """No model at all: one fixed answer. Isolates the hub's own throughput."""

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        yield "All good: on track for Friday."


def _cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) these processes have used so far, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


async def run_level(
    hub: Hub,
    timed: TimedResponder,
    conversations: int,
    per_conversation: int,
    workers: ModelWorkers | None = None,
) -> dict[str, Any]:
    sent: dict[str, asyncio.Future[float]] = {}

    def on_sent(row: Delivery) -> None:
        future = sent.get(row.inbox_id or "")
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    hub.outbox.on_sent(on_sent)
    latencies: list[float] = []
    overheads: list[float] = []

    async def conversation(index: int) -> None:
        user = PlatformUser("web", f"user{index}", f"User {index}")
        address = Address("web", "local", f"dm:aria:user{index}", "bench", AddressKind.DM)
        for _ in range(per_conversation):
            inbound = Inbound(
                event_id=str(uuid.uuid4()),
                address=address,
                sender=user,
                text="How is the project going?",
                mentions=("aria",),
            )
            start = time.perf_counter()
            receipt = await hub.port.receive(inbound)
            future = sent[receipt.inbox_id] = asyncio.get_running_loop().create_future()
            total = (await future) - start
            del sent[receipt.inbox_id]
            latencies.append(total)
            overheads.append(total - timed.spent.pop(str(address)))

    pids = workers.pids() if workers is not None else []
    began, hub_cpu, worker_cpu = time.perf_counter(), time.process_time(), _cpu_s(pids)
    await asyncio.gather(*(conversation(i) for i in range(conversations)))
    wall = time.perf_counter() - began
    hub_cpu, worker_cpu = time.process_time() - hub_cpu, _cpu_s(pids) - worker_cpu
    return {
        "concurrency": conversations,
        "messages": len(latencies),
        "hub_p50_ms": _ms(overheads, 0.50),
        "hub_p99_ms": _ms(overheads, 0.99),
        "total_p50_ms": _ms(latencies, 0.50),
        "total_p99_ms": _ms(latencies, 0.99),
        "msgs_per_s": round(len(latencies) / wall, 1),
        # CPU per message: the hub's process, and the model workers' together.
        "hub_cpu_ms": round(hub_cpu / len(latencies) * 1000, 2),
        "worker_cpu_ms": round(worker_cpu / len(latencies) * 1000, 2),
    }


def _ms(values: list[float], quantile: float) -> float:
    ordered = sorted(values)
    if quantile == 0.5:
        return round(statistics.median(ordered) * 1000, 2)
    return round(ordered[max(0, int(len(ordered) * quantile) - 1)] * 1000, 2)


async def main(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        storage = {"database_url": args.database_url} if args.database_url else {}
        settings = load_settings(
            home=home,
            llm={
                "model": args.model,
                "mock_response": "All good: on track for Friday.",
            },
            storage=storage,
            outbox={"poll_interval_s": 1.0},
            # One simulated person sends thousands of messages: pacing (hub/inbound/pacing.py)
            # would rightly slow them to a human rate, which is not what is measured here.
            runtime={
                "person_messages_per_minute": 1e9,
                "person_burst": 10**9,
                "channel_messages_per_minute": 1e9,
                "channel_burst": 10**9,
            },
            # The message path alone: recall's query embedding (bench/priming_latency.py)
            # would otherwise dominate every figure here.
            memory={"enabled": False},
        )
        workers = ModelWorkers(args.workers) if args.workers else None
        client = workers or LiteLLMCalls()
        model: Any = (
            LiteLLMResponder(settings.llm, builtin_tools(), client)
            if args.responder == "litellm"
            else InstantResponder()
        )
        timed = TimedResponder(model)
        hub = Hub(
            settings,
            adapter_factories={"web": WebAdapter},
            responders=Responders(timed, OfflineResponder()),
        )
        await hub.start()
        hub.create_anima("aria", "researcher", None)
        await run_level(hub, timed, 4, 25)  # warm-up: imports, caches, SQLite pages
        results = []
        for level in (1, 10, 100):
            per = max(1, args.messages // level)
            results.append(await run_level(hub, timed, level, per, workers))
        await hub.stop()
        if workers is not None:
            await workers.stop()
        return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages per level")
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--responder",
        choices=("litellm", "instant"),
        default="litellm",
        help="litellm with mock_response (default), or no model at all",
    )
    parser.add_argument(
        "--model",
        default="openai/bench",
        help="the model id litellm is given (its mock answers; the id decides cost lookups)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="model worker processes ([llm] workers); 0 runs litellm on the hub's loop",
    )
    arguments = parser.parse_args()
    rows = asyncio.run(main(arguments))
    header = (
        "concurrency",
        "messages",
        "hub p50",
        "hub p99",
        "total p50",
        "total p99",
        "msg/s",
        "hub cpu",
        "worker cpu",
    )
    keys = (
        "concurrency",
        "messages",
        "hub_p50_ms",
        "hub_p99_ms",
        "total_p50_ms",
        "total_p99_ms",
        "msgs_per_s",
        "hub_cpu_ms",
        "worker_cpu_ms",
    )
    print(" ".join(f"{h:>11}" for h in header))
    for r in rows:
        print(" ".join(f"{r[k]:>11}" for k in keys))
    if arguments.json:
        arguments.json.write_text(json.dumps(rows, indent=2))
