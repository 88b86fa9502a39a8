"""The embedder's tokenizer: memory it holds and time a text, ours against Hugging Face's.

The hub's (`hub/memory/e5_tokenizer.py`, SentencePiece over the file's 250,002 pieces) and
`tokenizers`' Unigram on the same vocabulary each run in a fresh process, which reports the
RSS the tokenizer added (the hub's: the whole model file's reader, its normalization map
included), the mean microseconds to tokenize each LoCoMo turn and question (prefix
included), and a digest of every id; the two digests must be equal.

    .venv/bin/python bench/tokenizer_memory.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_all

from hub.memory.e5_file import E5File, bundled_model_path


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _hugging_face(f: E5File) -> Callable[[str], list[int]]:
    from tokenizers import Tokenizer
    from tokenizers.models import Unigram

    vocab = f.vocabulary()
    pairs = [(p.decode(), s) for p, s in zip(vocab.pieces, vocab.scores, strict=True)]
    model = Tokenizer(Unigram(pairs, unk_id=vocab.unk, byte_fallback=False))
    del vocab, pairs

    def ids(text: str) -> list[int]:
        found: list[int] = model.encode(f.normalized(text), add_special_tokens=False).ids
        return found

    return ids


def _texts(data: Path) -> list[str]:
    texts: list[str] = []
    for conversation in load_all(data, ""):
        texts += [f"passage: {turn.text}" for turn in conversation.turns]
        texts += [f"query: {q.text}" for q in conversation.questions]
    return texts


def measure(which: str, data: Path) -> dict[str, float | str]:
    texts = _texts(data)
    gc.collect()
    before = _rss_mb()
    f = E5File(bundled_model_path())  # the hub's tokenizer, and the file's normalization map
    if which == "huggingface":
        gc.collect()
        before = _rss_mb()
        tokenize = _hugging_face(f)
    else:
        tokenize = f.content_ids
    gc.collect()
    held = _rss_mb() - before
    digest = hashlib.sha256()
    start = time.perf_counter()
    for text in texts:
        digest.update(np.array(tokenize(text), np.int32).tobytes() + b"|")
    elapsed = time.perf_counter() - start
    return {"rss_mb": held, "us_a_text": elapsed / len(texts) * 1e6, "ids": digest.hexdigest()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--one", choices=["hub", "huggingface"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.data)))
        return
    rows = {}
    for which in ("hub", "huggingface"):
        command = [sys.executable, __file__, "--data", str(args.data), "--one", which]
        rows[which] = json.loads(subprocess.run(command, check=True, capture_output=True).stdout)
    print(f"{len(_texts(args.data))} LoCoMo texts")
    for which, row in rows.items():
        print(f"{which:12} holds {row['rss_mb']:6.1f} MB, {row['us_a_text']:6.1f} µs a text")
    print("same ids:", rows["hub"]["ids"] == rows["huggingface"]["ids"])


if __name__ == "__main__":
    main()
