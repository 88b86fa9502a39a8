"""What the reranking studies share: a LoCoMo conversation indexed as `recall_locomo.py`
indexes it, the hub's top 50 for each question beside a second order of a study's making,
and the report of the two fused by reciprocal rank at a few weights (any/all@10 overall,
multi-hop all@10, any@10 per conversation: a gain must hold across them, not in one)."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import Conversation, Question, load_all
from recall_locomo import UNRECORDED_SCOPE, indexed

from hub.memory.embedder import Embedder
from hub.memory.search import CANDIDATES  # the studies rerank the hub's own candidates
from hub.memory.service import MemoryService

K = 10
RRF_K = 5.0


@dataclass
class Asked:
    conv: str
    category: int
    evidence: frozenset[str]
    hub: list[str]  # dia ids, best first
    other: list[str]  # the study's order, best first


# (the service, the question, the hub's top dia ids, item id -> dia id) -> the study's order
Other = Callable[[MemoryService, Question, list[str], dict[str, str]], Awaitable[list[str]]]


async def asked_in(conv: Conversation, embedder: Embedder, other: Other) -> list[Asked]:
    """Each question of `conv` with the hub's top CANDIDATES and the study's order."""
    asked: list[Asked] = []
    async with indexed(conv, embedder) as memory:
        for q in conv.questions:
            found = await memory.service.search(
                UNRECORDED_SCOPE, q.text, limit=CANDIDATES, explain=False
            )
            hub = [memory.dia_of[r.id] for r in found]
            theirs = await other(memory.service, q, hub, memory.dia_of)
            asked.append(Asked(conv.name, q.category, q.evidence, hub, theirs))
    return asked


async def asked_in_all(data: Path, only: str, embedder: Embedder, other: Other) -> list[Asked]:
    asked: list[Asked] = []
    for conv in load_all(data, only):
        asked += await asked_in(conv, embedder, other)
        print(f"{conv.name}: {len(conv.questions)} questions", file=sys.stderr, flush=True)
    return asked


def fused(a: Asked, weight: float) -> list[str]:
    """The hub's order and the study's by reciprocal rank, the study's weighted."""
    score: dict[str, float] = defaultdict(float)
    for n, dia in enumerate(a.hub):
        score[dia] += 1.0 / (RRF_K + n + 1)
    for n, dia in enumerate(a.other):
        score[dia] += weight / (RRF_K + n + 1)
    return sorted(score, key=lambda d: score[d], reverse=True)


def report(asked: Sequence[Asked], weights: Sequence[float]) -> None:
    """A row for each weight (0 is the hub's order), then the study's order alone."""
    convs = sorted({a.conv for a in asked})
    print(f"{len(asked)} questions; RRF k = {RRF_K}, the hub's top {CANDIDATES}")
    header = "weight | any@10 | all@10 | multi-hop all@10 | any@10 by conversation"
    print(header + " (" + " ".join(c.removeprefix("conv-") for c in convs) + ")")
    for weight in (*weights, None):
        hits: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for a in asked:
            top = set((a.other if weight is None else fused(a, weight))[:K])
            cell = (bool(a.evidence & top), bool(a.evidence) and a.evidence <= top)
            hits["all"].append(cell)
            hits[a.conv].append(cell)
            if a.category == 1:
                hits["multi-hop"].append(cell)
        mean = defaultdict(
            lambda: np.zeros(2), {n: np.mean(cells, axis=0) for n, cells in hits.items()}
        )
        per = " ".join(f".{round(mean[c][0] * 1000):03d}" for c in convs)
        label = "alone" if weight is None else f"{weight:.2f}"
        print(
            f"{label:>6} | {mean['all'][0]:.3f} | {mean['all'][1]:.3f} | "
            f"{mean['multi-hop'][1]:.3f} | {per}"
        )


def study_parser(doc: str) -> argparse.ArgumentParser:
    """A study's command line: --data (LoCoMo's folder) and --only (some conversations)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--only", default="", help="conversations, comma-separated")
    return parser
