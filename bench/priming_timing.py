"""The timing instruments of `priming_latency.py`: the index, graph and service wrapped so
each priming's time splits into its parts, the CPU other processes used meanwhile, the wait
for them to go quiet, the event loop's longest stall, and the quantiles reported.
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from hub.memory.documents import MemoryItem
from hub.memory.graph import KnowledgeGraph
from hub.memory.index import (
    Boost,
    Hit,
    MemoryFilter,
    SearchMode,
    SparseVec,
)
from hub.memory.index_edge import EdgeIndex
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService

# ------------------------------------------------------------------ the priming's parts


class TimedIndex(EdgeIndex):
    """The real (embedded) index, with the time spent in `query` added up per priming
    section."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
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
        own_terms: SparseVec | None = None,
    ) -> list[Hit]:
        start = time.perf_counter()
        hits = super().query(
            dense, sparse, flt, limit, mode, candidates, boost, people, span, own_terms
        )
        section = "recent" if flt.since else "important" if flt.min_importance else "related"
        key = f"{section}/{mode.value}"
        self.spent[key] = self.spent.get(key, 0.0) + time.perf_counter() - start
        self.calls += 1
        return hits


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


# ------------------------------------------------------------------ load, waits and quantiles


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


async def loop_stall(seconds: float) -> float:
    """The longest the event loop went without running a 1 ms timer, over `seconds`."""
    worst, end = 0.0, time.perf_counter() + seconds
    while (now := time.perf_counter()) < end:
        await asyncio.sleep(0.001)
        worst = max(worst, time.perf_counter() - now)
    return worst
