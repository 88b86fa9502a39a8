"""The Memory of DESIGN §4: record turns as markdown, index them, recall and prime.

Markdown is written synchronously (it is the truth and must survive a crash); embedding and
indexing run in a worker thread, off the event loop (indexer.py), and can always be redone
from the markdown (`rebuild`). Every query is filtered by privacy scope inside the index
engine; what a turn is primed with is put together in priming.py.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from hub.markdown_files import atomic_write
from hub.memory.access import AccessLog
from hub.memory.context import PASSAGE_FORMAT
from hub.memory.documents import (
    UNREADABLE,
    Layer,
    MemoryItem,
    append_episode,
    episode_path,
    has_section,
    importance_of,
    items_in,
    items_of_text,
    iter_items,
    iter_notes,
    stable_id,
)
from hub.memory.embedder import Embedder, make_embedder
from hub.memory.erase import drop_set_aside, forget_in
from hub.memory.graph import KnowledgeGraph
from hub.memory.index import MemoryFilter, SearchMode, VectorIndex
from hub.memory.index_open import open_index
from hub.memory.indexer import EMBED_CHARS, Indexer, Progress
from hub.memory.mentions import Named
from hub.memory.paths import MemoryPathError, memory_path
from hub.memory.priming import primed
from hub.memory.profiles import Profiles, self_statements
from hub.memory.recall import Priming, Recalled, RecallScope
from hub.memory.reconcile import behind, changed_items, mark_synced, synced_at
from hub.memory.search import Wanted, asked_in, ranked
from hub.memory.timings import Durations
from hub.plaintext import one_line
from hub.redaction.redact import redact
from hub.settings import MemorySection

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


_FLUSH_S = 60.0  # access counts reach disk at least this often
STOP_GRACE_S = 10.0  # a stop waits this long for queued indexing; start-up does the rest
WRITABLE = ("episodes", "knowledge", "procedures", "skills")


@dataclass(frozen=True, slots=True)
class TurnRecord:
    anima: str
    inbox_id: str
    person_id: str | None
    person_name: str
    where: str
    channel_key: str
    scope: str
    user_text: str
    reply: str
    at: datetime
    # With no model to judge what matters, keep what people say about themselves.
    learn_self_statements: bool = False


class MemoryService:
    def __init__(
        self,
        home: Path,
        settings: MemorySection,
        index: VectorIndex,
        embedder: Embedder,
        now: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.home = home
        self.now = now  # the hub's clock: recency, last access
        self.settings = settings
        self.index = index
        self.embedder = embedder
        self.indexer = Indexer(index, embedder, self.anima_dir)
        self.profiles = Profiles(home / "shared" / "users")
        self._graphs: dict[str, KnowledgeGraph] = {}
        self._access: dict[str, AccessLog] = {}
        self.priming_ms = Durations()  # every prime's duration (GET /api/stats recall_ms)
        # The ids merged into a person (IdentityService.aliases_of, set by the hub).
        self.aliases_of: Callable[[str], tuple[str, ...]] = lambda _person: ()
        # Who a text names, and the text with their names as "I" / "my"
        # (IdentityService.names_in, set by the hub).
        self.names_in: Callable[[str], Named] = lambda text: Named((), text)
        self._warming: asyncio.Task[None] | None = None

    @classmethod
    def from_settings(
        cls, home: Path, settings: MemorySection, now: Callable[[], datetime] = _utcnow
    ) -> MemoryService:
        embedder = make_embedder(
            settings.embedder,
            settings.embedding_model,
            Path(settings.embedding_path) if settings.embedding_path else None,
        )
        index = open_index(home / "index", settings.qdrant_url or None)
        return cls(home, settings, index, embedder, now)

    def anima_dir(self, anima: str) -> Path:
        return self.home / "animas" / anima

    def _anima_dirs(self) -> list[Path]:
        """Every Anima's memory folder on disk (forgetting a person reaches them all)."""
        return sorted(p for p in (self.home / "animas").glob("*/") if p.is_dir())

    # lifecycle ------------------------------------------------------------------------

    async def start(self, animas: Sequence[str], warm_up: bool = True) -> None:
        """Open the index. A new embedding model means every vector is rebuilt, never mixed;
        an Anima whose index is empty while its markdown is not (a deleted or replaced
        index) is rebuilt from the markdown. The embedder warms up off the loop, started
        here and not awaited: loading it took 1-2 s of a start on two cores, and the hub
        answers meanwhile (issue 47); a turn that comes first waits for the load as the
        warm-up does (`warmed`)."""
        if warm_up:
            self._warming = asyncio.create_task(asyncio.to_thread(self._warm_up), name="warm-up")
        await self._open(animas)

    async def warmed(self) -> None:
        """Once the embedder's warm-up, begun by `start`, is over (at once if none was)."""
        if self._warming is not None:
            await asyncio.shield(self._warming)

    async def _open(self, animas: Sequence[str]) -> None:
        model = f"{self.embedder.model_id}+{PASSAGE_FORMAT}"
        if not self.index.ensure(self.embedder.dim, model):
            log.warning("embedding model changed to %s: rebuilding the index", model)
            self.index.clear()
            self.index.ensure(self.embedder.dim, model)
        self._optimize_if_behind()
        checked_at, since = datetime.now(UTC), synced_at(self.home)
        for anima in animas:
            empty = self.index.count(MemoryFilter(anima=anima)) == 0
            if empty and _has_markdown(self.anima_dir(anima)):
                log.warning("index of %s is empty: rebuilding it from markdown", anima)
                await self.rebuild(anima)
                continue
            late = behind(self.index, anima, changed_items(self.anima_dir(anima), since))
            if late:  # a stop cut their indexing off (hub/memory/reconcile.py)
                log.warning("indexing %d memory items of %s a stop left out", len(late), anima)
                self.indexer.later(anima, late)
        if self.indexer.idle:  # else the flusher marks it once they are indexed
            mark_synced(self.home, checked_at)

    def _optimize_if_behind(self) -> None:
        """Put what dense search would scan into the HNSW graph, once enough has piled up
        (`[memory] optimize_at`): at 100,000 points that took a priming's index time from
        20.5 to 7.8 ms p50 (bench/README.md). It blocks and holds the GIL (seconds per 10,000
        points), so it runs here, at start, before the hub serves anything."""
        behind = self.index.unindexed()
        if behind < self.settings.optimize_at:
            return
        log.info("memory index: adding %d points to its search graph (once)", behind)
        started = time.perf_counter()
        self.index.optimize()
        log.info("memory index: done in %.1f s", time.perf_counter() - started)

    def _warm_up(self) -> None:
        """Embed one query now: the first embedding loads the model, pages its weights in
        and starts its threads (0.15-0.35 s here, against ~30 ms for the next;
        bench/README.md), which would otherwise be the first turn's priming after a start."""
        try:
            self.embedder.embed_queries(["warm-up"])
        except (OSError, RuntimeError, ValueError) as exc:  # as recall: the turn goes on
            log.warning("the embedder did not warm up: %s", exc)

    async def flush_forever(self, worked: Callable[[], None]) -> None:
        """Write the access counts every few seconds, calling `worked` after each write; the
        hub runs it under its `Supervisor` (a full disk raises, is reported, and the loop
        is restarted)."""
        while True:
            await asyncio.sleep(_FLUSH_S)
            self.flush_access()
            self._mark_if_synced()
            worked()

    def _mark_if_synced(self) -> None:
        """With no indexing in flight, the index holds everything the markdown did."""
        if self.indexer.idle:
            mark_synced(self.home, datetime.now(UTC))

    def access(self, anima: str) -> AccessLog:
        if anima not in self._access:
            self._access[anima] = AccessLog(self.anima_dir(anima))
        return self._access[anima]

    def flush_access(self) -> None:
        for log_ in self._access.values():
            log_.flush()

    async def drain(self) -> None:
        """Wait for queued indexing (tests, shutdown)."""
        await self.indexer.drain()

    def backlog(self) -> int:
        """Items written to markdown and not yet in the index (health shows it)."""
        return self.indexer.backlog()

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Finish queued indexing if that takes under `grace_s`, else stop after the batch
        in flight: what is left is in the markdown, and start-up indexes it
        (hub/memory/reconcile.py). Then write the access counts and close the index."""
        await self.warmed()  # a thread cannot be cancelled: the index closes after it
        if behind := await self.indexer.stop(grace_s):
            log.warning("stopping with %d memory items not yet indexed: start-up does it", behind)
        else:
            self._mark_if_synced()
        self.close()

    async def forget_scopes(
        self, scopes: Sequence[str], until: datetime | None = None, purge: bool = True
    ) -> dict[str, int]:
        """Delete every item kept under these scopes (a person's `person:<id>`; with
        `until`, those written by then) from each Anima's markdown, every copy of it
        included (hub/memory/erase.py), and from the index; how many went, per Anima.
        Queued indexing is drained first, so nothing deleted is indexed again after.
        `purge`: then leave nothing of them in the index's files (`purge_index`)."""
        await self.drain()
        wanted = set(scopes)
        gone: dict[str, int] = {}
        for folder in self._anima_dirs():
            removed = forget_in(folder, wanted, until)
            self._graphs.pop(folder.name, None)  # a cached note of theirs would be listed
            if removed:
                self.index.delete(removed)
                gone[folder.name] = len(removed)
        if purge:
            self.purge_index()
        return gone

    def purge_index(self) -> None:
        """Leave nothing of deleted points in the index's files, whenever they were deleted
        (what the weekly and monthly stages dropped from it holds the same words as the
        archived copies a forget erased), nor in an index set aside as unreadable."""
        self.index.purge()
        drop_set_aside(self.home)

    def count_scopes(self, scopes: Sequence[str]) -> dict[str, int]:
        """How many items each Anima keeps under these scopes (what "About me" shows)."""
        counts = {}
        for folder in self._anima_dirs():
            n = self.index.count(MemoryFilter(anima=folder.name, scopes=tuple(scopes)))
            if n:
                counts[folder.name] = n
        return counts

    def close(self) -> None:
        """Write the access counts and close the index (no indexing may be in flight)."""
        self.flush_access()
        self.indexer.close()
        self.index.close()

    # writing --------------------------------------------------------------------------

    def record_turn(self, turn: TurnRecord) -> MemoryItem:
        """Append the turn to today's episodes (redacted), then index it in the background."""
        user_text, _ = redact(turn.user_text)
        reply, _ = redact(turn.reply)
        # The speaker labels are one line each: a name cannot start a line of its own.
        who, where = one_line(turn.person_name), one_line(turn.where)
        text = f"**{who}** ({where}): {user_text}\n**{turn.anima}**: {reply}"
        item = MemoryItem(
            id=stable_id("turn", turn.inbox_id),
            layer=Layer.EPISODIC,
            text=text,
            path=episode_path(turn.at.date()),
            scope=turn.scope,
            created=turn.at,
            updated=turn.at,
            person=turn.person_id,
            channel=turn.channel_key,
            importance=importance_of(user_text, 0.0),
            section=turn.at.strftime("%H:%M"),
        )
        self.add_episode(turn.anima, item)
        if turn.learn_self_statements and turn.person_id:
            for fact in self_statements(user_text):
                self.profiles.add(
                    turn.person_id,
                    fact,
                    turn.anima,
                    turn.at.date(),
                    private=turn.scope.startswith("person:"),
                )
        return item

    def has_episode(self, anima: str, inbox_id: str, at: datetime) -> bool:
        """Whether the turn answering `inbox_id` at `at` is in its day's episodes."""
        path = self.anima_dir(anima) / episode_path(at.date())
        return has_section(path, stable_id("turn", inbox_id))

    def record_note(
        self, anima: str, key: str, text: str, scope: str, channel: str | None, at: datetime
    ) -> MemoryItem:
        """Append what an Anima did on its own (a heartbeat, a cron) to its episodes.
        Idempotent by `key`, like record_turn by inbox id."""
        clean, _ = redact(text)
        item = MemoryItem(
            id=stable_id("note", key),
            layer=Layer.EPISODIC,
            text=clean,
            path=episode_path(at.date()),
            scope=scope,
            created=at,
            updated=at,
            person=None,
            channel=channel,
            importance=importance_of(clean, 0.0),
            section=at.strftime("%H:%M"),
        )
        self.add_episode(anima, item)
        return item

    def add_episode(self, anima: str, item: MemoryItem) -> bool:
        """Append `item` to the Anima's episodes and queue it for the index; False when its
        day already holds it (an item's id makes each record idempotent)."""
        if not append_episode(self.anima_dir(anima), item):
            return False
        self.indexer.later(anima, [item])
        return True

    async def index_items(
        self, anima: str, items: Sequence[MemoryItem], progress: Progress | None = None
    ) -> None:
        await self.indexer.index_items(anima, items, progress)

    def graph(self, anima: str) -> KnowledgeGraph:
        """The Anima's wikilink graph, read from markdown once and kept until a write."""
        if anima not in self._graphs:
            self._graphs[anima] = KnowledgeGraph(iter_notes(self.anima_dir(anima)))
        return self._graphs[anima]

    async def refresh(self, anima: str, paths: Iterable[str], gone: Iterable[str] = ()) -> None:
        """After files were changed on disk (consolidation): index what `paths` hold now
        (nothing for a retired or missing file), drop the points of the item ids in `gone`,
        and forget the cached graph."""
        folder = self.anima_dir(anima)
        self._graphs.pop(anima, None)
        items = [
            item
            for relative in dict.fromkeys(paths)
            if (folder / relative).is_file()
            for item in items_in(folder, folder / relative)
        ]
        kept = {item.id for item in items}
        self.index.delete([i for i in dict.fromkeys(gone) if i not in kept])
        await self.index_items(anima, items)

    async def rebuild(self, anima: str, progress: Progress | None = None) -> int:
        """Index every memory item of an Anima from its markdown; the markdown is untouched."""
        self._graphs.pop(anima, None)
        self.index.delete_where(MemoryFilter(anima=anima))
        items = iter_items(self.anima_dir(anima))
        await self.index_items(anima, items, progress)
        return len(items)

    def read(self, anima: str, relative: str) -> str:
        return memory_path(self.anima_dir(anima), relative).read_text(encoding="utf-8")

    async def write(self, anima: str, relative: str, content: str) -> int:
        """Replace one memory file (secrets redacted) and re-index what it holds."""
        folder = self.anima_dir(anima)
        path = memory_path(folder, relative)
        if relative.split("/", 1)[0] not in WRITABLE:
            raise MemoryPathError(f"{relative!r}: write under {', '.join(WRITABLE)}")
        text = redact(content)[0]
        after = items_of_text(folder, path, text)  # a file it cannot read is not written
        try:
            before = {item.id for item in items_in(folder, path)} if path.exists() else set()
        except UNREADABLE:  # a broken file being replaced: none of it could be indexed
            before = set()
        atomic_write(path, text)
        self._graphs.pop(anima, None)
        self.index.delete([i for i in before if i not in {item.id for item in after}])
        await self.index_items(anima, after)
        return len(after)

    # recall ---------------------------------------------------------------------------

    async def search(
        self,
        scope: RecallScope,
        query: str,
        limit: int = 10,
        layers: tuple[str, ...] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        dense: list[float] | None = None,
        explain: bool = True,
        named: Named | None = None,
    ) -> list[Recalled]:
        """Recall within the scope's privacy; `dense` is the query's embedding, if known,
        `named` whom it names (`names_in`, if not given). The query is embedded with the
        names it holds as "I" ("What did I research?"): the people retriever finds whose
        words, and a name would pull every line that mentions them.
        `explain` runs each retriever alone as well, to say why each result matched
        (what the API and CLI show; priming skips it, as it costs two more queries)."""
        scope = self.linked(scope)
        flt = MemoryFilter(
            anima=scope.anima,
            layers=layers,
            scopes=scope.filter_scopes(),
            since=since.timestamp() if since else None,
            until=until.timestamp() if until else None,
            min_importance=min_importance,
        )
        named = named if named is not None else self.names_in(query)  # priming gives it
        dense = dense if dense is not None else await self.embed_query(named.unnamed)
        now = self.now()
        uses = self.access(scope.anima)
        asked = asked_in(query, now, named.people)
        wanted = Wanted(query, dense, asked, limit, mode, explain, own_words=named.unnamed)
        found = ranked(self.index, flt, wanted, now, uses.count)
        if scope.admin_scopes is None:  # an Anima recalled these; an admin looking is no use
            uses.touch(((r.id, r.path, r.section) for r in found), now)
        return found

    async def embed_query(self, text: str) -> list[float]:
        return (await asyncio.to_thread(self.embedder.embed_queries, [text[:EMBED_CHARS]]))[0]

    async def prime(self, scope: RecallScope, text: str) -> Priming:
        """The sections recalled before a turn, each within its own token budget; how
        long it took joins `priming_ms`."""
        started = time.perf_counter()
        priming = await primed(self, scope, text)
        self.priming_ms.add((time.perf_counter() - started) * 1000)
        return priming

    def linked(self, scope: RecallScope) -> RecallScope:
        """The scope with the ids merged into its person (their DM memory is theirs)."""
        if not scope.person_id or scope.aliases:
            return scope
        aliases = self.aliases_of(scope.person_id)
        return replace(scope, aliases=aliases) if aliases else scope

    def profile_lines(self, scope: RecallScope) -> list[str]:
        """What Animas learned about the person; in a channel, not what they said in DMs."""
        if not scope.person_id:
            return []
        return self.profiles.learned(scope.person_id, in_dm=scope.is_dm)


def _has_markdown(folder: Path) -> bool:
    return any(next((folder / name).glob("**/*.md"), None) is not None for name in WRITABLE)


def open_memory(
    home: Path, settings: MemorySection, now: Callable[[], datetime] = _utcnow
) -> MemoryService | None:
    return MemoryService.from_settings(home, settings, now) if settings.enabled else None
