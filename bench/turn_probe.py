"""The CPU accounting and timing probes of `turn_latency.py`: the CPU of this process's
threads and of other processes (/proc), wrappers that time the hub's memory objects (its
embedder, its index, `MemoryService.embed_query` and `prime`), the embedder's gate before
issue 13 (`--gate serial|fifo`), and which native threads are the embedder's or the index's.
A measurement only: the wrapped objects do what they did.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.memory.index import VectorIndex
from hub.memory.service import MemoryService

TICK = os.sysconf("SC_CLK_TCK")

# ------------------------------------------------------------------ CPU accounting


def _thread_cpu() -> dict[int, tuple[str, float]]:
    """Every thread of this process: its name and CPU seconds so far (/proc/self/task)."""
    out: dict[int, tuple[str, float]] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            comm = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[int(tid)] = (comm, (int(fields[11]) + int(fields[12])) / TICK)
    return out


def _cpu_s(pids: Sequence[int]) -> float:
    """CPU seconds (user + system) these processes have used so far, from /proc."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


class ForeignLoad:
    """CPU the rest of the machine used meanwhile (/proc/stat busy less this process and the
    processes given), in cores."""

    def __init__(self, pids: Sequence[int] = ()) -> None:
        self.pids = list(pids)
        self.start = self._sample()

    def _sample(self) -> tuple[float, float, float]:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
        ticks = [int(f) for f in fields]
        busy = (sum(ticks[:8]) - ticks[3] - ticks[4]) / TICK
        mine = time.process_time() + _cpu_s(self.pids)
        return busy, mine, time.perf_counter()

    def cores(self) -> float:
        busy, mine, wall = self._sample()
        foreign = (busy - self.start[0]) - (mine - self.start[1])
        return round(max(0.0, foreign) / (wall - self.start[2]), 2)


@dataclass
class Probe:
    """What the wrapped memory objects saw during one level."""

    embed_cpu: float = 0.0  # thread CPU inside embed_queries / embed_passages
    index_cpu: float = 0.0  # thread CPU inside VectorIndex calls
    index_calls: dict[str, int] = field(default_factory=dict)
    queries: list[str] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)
    query_s: list[float] = field(default_factory=list)  # embed_queries, the call
    query_wait_s: list[float] = field(default_factory=list)  # … less the model's own time
    behind_passages: int = 0  # queries that arrived while a passage batch was embedding
    embed_query_s: list[float] = field(default_factory=list)  # MemoryService.embed_query
    prime_s: list[float] = field(default_factory=list)  # MemoryService.prime
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        fresh = Probe()
        for name in self.__dataclass_fields__:
            if name != "lock":
                setattr(self, name, getattr(fresh, name))


class TimedEmbedder:
    """The hub's embedder, timed: thread CPU and wall per call, and inside it the model's
    own time (`_run`, which the embedder calls under its gate), so what a query waited at
    the gate is the call less the model's time."""

    def __init__(self, inner: Any, probe: Probe) -> None:
        self.inner, self.probe = inner, probe
        self.model_id: str = inner.model_id
        self.dim: int = inner.dim
        self._local = threading.local()
        self._passage_batches = 0  # passage batches in the model now (0 or 1: the gate)
        run = getattr(inner, "_run", None)
        if run is not None:

            def timed_run(batch: list[str], is_query: bool) -> list[list[float]]:
                if not is_query:
                    self._passage_batches += 1
                start = time.perf_counter()
                try:
                    rows: list[list[float]] = run(batch, is_query)
                    return rows
                finally:
                    self._local.model_s = getattr(self._local, "model_s", 0.0) + (
                        time.perf_counter() - start
                    )
                    if not is_query:
                        self._passage_batches -= 1

            inner._run = timed_run

    @contextmanager
    def _timed(self) -> Iterator[None]:
        cpu = time.thread_time()
        try:
            yield
        finally:
            spent = time.thread_time() - cpu
            with self.probe.lock:
                self.probe.embed_cpu += spent

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        behind = self._passage_batches > 0
        self._local.model_s = 0.0
        start = time.perf_counter()
        with self._timed():
            rows: list[list[float]] = self.inner.embed_queries(texts)
        wall = time.perf_counter() - start
        with self.probe.lock:
            self.probe.queries.extend(texts)
            self.probe.query_s.append(wall)
            self.probe.query_wait_s.append(max(0.0, wall - self._local.model_s))
            self.probe.behind_passages += behind
        return rows

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        with self._timed():
            rows: list[list[float]] = self.inner.embed_passages(texts)
        with self.probe.lock:
            self.probe.passages.extend(texts)
        return rows


# What the hub calls of an index.
INDEX_CALLS = tuple(
    name for name, attr in vars(VectorIndex).items() if callable(attr) and name[0] != "_"
)


def time_index(index: VectorIndex, probe: Probe) -> None:
    """Time every call of the hub's index (each of `VectorIndex`'s public methods) in thread
    CPU, on the instance itself: the runtime and the indexer share it. A call the index
    makes of its own public methods (`clear` closes it) counts once, in the outer call."""
    inside = threading.local()
    for name in INDEX_CALLS:
        setattr(index, name, _timed(getattr(index, name), name, probe, inside))


def _timed(
    call: Callable[..., Any], name: str, probe: Probe, inside: threading.local
) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        if getattr(inside, "busy", False):
            return call(*args, **kwargs)
        inside.busy = True
        cpu = time.thread_time()
        try:
            return call(*args, **kwargs)
        finally:
            inside.busy = False
            spent = time.thread_time() - cpu
            with probe.lock:
                probe.index_cpu += spent
                probe.index_calls[name] = probe.index_calls.get(name, 0) + 1

    return timed


def instrument(memory: MemoryService, probe: Probe) -> None:
    """Time the service's embedder, index, `embed_query` and `prime` (instance attributes:
    the runtime calls the same object; its indexer shares the embedder and the index)."""
    memory.embedder = memory.indexer.embedder = TimedEmbedder(memory.embedder, probe)
    time_index(memory.index, probe)
    embed_query, prime = memory.embed_query, memory.prime

    async def timed_embed_query(text: str) -> list[float]:
        start = time.perf_counter()
        try:
            return await embed_query(text)
        finally:
            probe.embed_query_s.append(time.perf_counter() - start)

    async def timed_prime(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await prime(*args, **kwargs)
        finally:
            probe.prime_s.append(time.perf_counter() - start)

    memory.embed_query = timed_embed_query  # type: ignore[method-assign]
    memory.prime = timed_prime  # type: ignore[method-assign]


class SerialGate:
    """`--gate serial`: the gate before issue 13's fix, one batch (queries or passages) at a
    time, a waiting query before waiting passages, so a query waits for the passage batch in
    flight."""

    def __init__(self, priority: bool = True) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._queries = 0  # queries waiting
        self._priority = priority

    @contextmanager
    def hold(self, *, urgent: bool) -> Iterator[None]:
        urgent = urgent and self._priority
        with self._cond:
            self._queries += urgent
            try:
                while self._busy or (not urgent and self._queries):
                    self._cond.wait()
            finally:
                self._queries -= urgent
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()


class ThreadClasses:
    """Which native threads are the embedder's (OpenMP workers: not Python threads, not
    Qdrant Edge's, absent before embedding started) and which are the index's (`edge-*`)."""

    def __init__(self) -> None:
        self.before = set(_thread_cpu())  # taken before the hub embeds anything

    def split(self) -> dict[str, float]:
        python = {t.native_id for t in threading.enumerate()}
        cpu = {"embed": 0.0, "index": 0.0}
        for tid, (name, spent) in _thread_cpu().items():
            if name.startswith("edge-"):
                cpu["index"] += spent
            elif tid not in python and tid not in self.before:
                cpu["embed"] += spent
        return cpu
