"""Could offline mode count a memory as matching a question by closeness in meaning alone?

Offline answers (hub/turns/offline.py) list a recalled line only when it shares a search term
with the message, so "what do I like to drink?" does not find "I prefer tea over coffee".
The alternative is a threshold on the embedder's cosine between the question and the line.
This measures whether such a threshold separates what answers a question from what does
not: for each LoCoMo question with evidence, the 10 turns nearest it by cosine (the lines
offline mode would judge), and for thresholds, how many a question keeps, how many of those
are evidence, and how much of the evidence among them is kept; the same for a margin
below the question's best cosine; and, for comparison, for the rule offline mode has (the
line's words share a search term with the question's, its speaker's name aside).

    .venv/bin/python bench/offline_relevance_study.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_all

from hub.memory.embedder import make_embedder
from hub.settings import MemorySection
from hub.turns.offline import relevant

NEAREST = 10
THRESHOLDS = (0.80, 0.82, 0.83, 0.84, 0.85, 0.86, 0.87, 0.88)
MARGINS = (0.0, 0.01, 0.02, 0.03, 0.05)


def judged(data: Path, only: str) -> tuple[NDArray[np.float64], int]:
    """Rows of (cosine, is evidence, the question's best cosine, shares a term) for each
    question's nearest turns, and the number of questions."""
    settings = MemorySection()
    embedder = make_embedder(settings.embedder, settings.embedding_model, None)
    rows: list[tuple[float, float, float, float]] = []
    questions = 0
    for conv in load_all(data, only):
        passages = np.array(embedder.embed_passages([t.text for t in conv.turns]))
        asked = [q for q in conv.questions if q.evidence]
        cosines = np.array(embedder.embed_queries([q.text for q in asked])) @ passages.T
        for q, row in zip(asked, cosines, strict=True):
            nearest = np.argsort(-row)[:NEAREST]
            best = float(row[nearest[0]])
            words = [conv.turns[j].text.split(": ", 1)[-1] for j in nearest]
            sharing = set(relevant(q.text, words))
            rows += [
                (
                    float(row[j]),
                    float(conv.turns[j].dia_id in q.evidence),
                    best,
                    float(said in sharing),
                )
                for j, said in zip(nearest, words, strict=True)
            ]
        questions += len(asked)
        print(f"{conv.name}: {len(asked)} questions", flush=True)
    return np.array(rows), questions


def kept_line(label: str, rows: NDArray[np.float64], keep: NDArray[np.bool_], n: int) -> str:
    evidence = rows[:, 1] == 1
    precision = float(rows[keep, 1].mean()) if keep.any() else 0.0
    recall = float((keep & evidence).sum() / max(1, evidence.sum()))
    return f"| {label} | {keep.sum() / n:.2f} | {precision:.3f} | {recall:.3f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--only", default="", help="conversation names, comma-separated")
    args = parser.parse_args()
    rows, n = judged(args.data, args.only)
    print(f"\n{n} questions, their {NEAREST} nearest turns; {rows[:, 1].mean():.3f} evidence")
    print("| kept when | lines a question | evidence among them | evidence kept |")
    print("|---|---:|---:|---:|")
    for t in THRESHOLDS:
        print(kept_line(f"cosine ≥ {t:.2f}", rows, rows[:, 0] >= t, n))
    for m in MARGINS:
        print(kept_line(f"within {m:.2f} of the best", rows, rows[:, 0] >= rows[:, 2] - m, n))
    print(kept_line("shares a search term (today's rule)", rows, rows[:, 3] == 1, n))
    pct = (10, 50, 90)
    ev, other = rows[rows[:, 1] == 1, 0], rows[rows[:, 1] == 0, 0]
    print(f"cosine percentiles {pct}: evidence {np.percentile(ev, pct).round(3).tolist()}, ")
    print(f"  the rest {np.percentile(other, pct).round(3).tolist()}")


if __name__ == "__main__":
    main()
