"""The Memory's writer side: embed memory items and put them into the index, off the loop.

Markdown is written first, by the caller (it is the truth and must survive a crash); this
makes the index hold what it holds, and can always be redone from it. Passages are embedded
on one thread of their own and never in a turn's way: a query runs at once, beside the
passage batch in flight, and the next batch waits for it (embedder.py). What queues for an
Anima while its batch embeds goes in its next batch (one batch of many costs less than many
of one). A stop that cannot wait leaves the rest to start-up (reconcile.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hub.memory.context import FileItems, indexed_text, passage_texts, previous_id
from hub.memory.documents import MemoryItem, items_in
from hub.memory.embedder import Embedder
from hub.memory.index import IndexPoint, SparseVec, VectorIndex
from hub.memory.lexical import sparse_vector
from hub.memory.reconcile import PAYLOAD_TEXT
from hub.memory.sharing import audience

log = logging.getLogger(__name__)

# multilingual-e5-small reads 512 tokens; more text only costs time. Long items are
# represented by their beginning until items are split into passages.
EMBED_CHARS = 1500
_EMBED_BATCH = 64
Progress = Callable[[int, int], None]


class Indexer:
    def __init__(
        self, index: VectorIndex, embedder: Embedder, anima_dir: Callable[[str], Path]
    ) -> None:
        self.index = index
        self.embedder = embedder
        self._anima_dir = anima_dir
        self._tasks: set[asyncio.Task[None]] = set()  # one per Anima with a queue
        self._queued: dict[str, list[MemoryItem]] = {}  # per Anima, waiting to be indexed
        self._running: set[str] = set()  # Animas whose queue task runs
        self._in_batch: dict[str, int] = {}  # per Anima, items its task is embedding now
        self._stopping = False
        self._embedding = 0  # index_items calls in flight (the queues', refresh, rebuild)
        self._passages = ThreadPoolExecutor(1, thread_name_prefix="memory-index")

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being indexed: the index holds what was handed in."""
        return not self._tasks and not self._embedding

    def backlog(self) -> int:
        """Items handed in and not yet in the index (health shows it)."""
        return sum(map(len, self._queued.values())) + sum(self._in_batch.values())

    def later(self, anima: str, items: list[MemoryItem]) -> None:
        """Queue items for the Anima's queue task, starting it if it is not running."""
        self._queued.setdefault(anima, []).extend(items)
        if anima not in self._running:
            self._running.add(anima)
            task = asyncio.get_running_loop().create_task(self._run_queue(anima))
            self._tasks.add(task)
            task.add_done_callback(self._done)

    async def _run_queue(self, anima: str) -> None:
        try:
            while batch := self._queued.pop(anima, None):
                self._in_batch[anima] = len(batch)
                await self.index_items(anima, batch)
        finally:
            self._in_batch.pop(anima, None)
            self._running.discard(anima)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # The markdown is already safe; `animahub repair-rag` re-indexes it.
            log.error("indexing failed: %r", task.exception())

    async def drain(self) -> None:
        """Wait for queued indexing (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def stop(self, grace_s: float) -> int:
        """Finish queued indexing if that takes under `grace_s`, else stop after the batches
        in flight; how many items were left to start-up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace_s
        while self._tasks and (left := deadline - loop.time()) > 0:
            await asyncio.wait(list(self._tasks), timeout=left)  # not cancelled at the end
        if not self._tasks:
            return 0
        self._stopping = True
        behind = self.backlog()
        self._queued.clear()
        await self.drain()
        return behind

    def close(self) -> None:
        self._passages.shutdown()

    async def index_items(
        self, anima: str, items: Sequence[MemoryItem], progress: Progress | None = None
    ) -> None:
        """Embed and index the items now, in batches; `progress(done, total)` after each."""
        self._embedding += 1
        try:
            await self._index(anima, items, progress)
        finally:
            self._embedding -= 1

    async def _index(
        self, anima: str, items: Sequence[MemoryItem], progress: Progress | None
    ) -> None:
        in_file = self._file_items(anima, items)
        for start in range(0, len(items), _EMBED_BATCH):
            if self._stopping:
                return  # the rest is in the markdown: start-up indexes it
            batch = items[start : start + _EMBED_BATCH]
            dense = await asyncio.get_running_loop().run_in_executor(
                self._passages, self._embed_passages, batch, in_file
            )
            points = [
                IndexPoint(
                    item.id,
                    vector,
                    SparseVec(*sparse_vector(indexed_text(item))),
                    payload(anima, item, previous_id(item, in_file)),
                )
                for item, vector in zip(batch, dense, strict=True)
            ]
            self.index.upsert(points)
            if progress is not None:
                progress(start + len(batch), len(items))

    def _embed_passages(self, items: Sequence[MemoryItem], in_file: FileItems) -> list[list[float]]:
        return self.embedder.embed_passages(passage_texts(items, in_file, EMBED_CHARS))

    def _file_items(self, anima: str, items: Sequence[MemoryItem]) -> FileItems:
        """An episode file's sections, in order, for embedding context: from the markdown
        when the file exists, else from the items being indexed (a benchmark, an import)."""
        folder = self._anima_dir(anima)
        given: dict[str, list[MemoryItem]] = {}
        for item in items:
            given.setdefault(item.path, []).append(item)
        read: dict[str, Sequence[MemoryItem]] = {}

        def lookup(path: str) -> Sequence[MemoryItem]:
            if path not in read:
                on_disk = folder / path
                read[path] = items_in(folder, on_disk) if on_disk.is_file() else given.get(path, [])
            return read[path]

        return lookup


def payload(anima: str, item: MemoryItem, prev: str | None = None) -> dict[str, object]:
    """What the index keeps beside an item's vectors: its filter fields, and what recall
    shows and lifts by."""
    return {
        "prev": prev,
        "anima": anima,
        "layer": item.layer.value,
        # Who may recall it: what a person shared is `shared` (hub/memory/sharing.py).
        "scope": audience(item.scope),
        "person": item.person,
        "channel": item.channel,
        "ts": item.created.timestamp(),
        "importance": item.importance,
        "access_count": item.access_count,
        "path": item.path,
        "section": item.section,
        "title": item.title,
        "text": indexed_text(item)[:PAYLOAD_TEXT],
    }
