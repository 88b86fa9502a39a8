"""What `priming_latency.py` prints: progress notes as it goes (stderr) and, at the end, the
report of its results (stdout).
"""

from __future__ import annotations

import sys
from typing import Any

TARGET_P95_MS = 50.0  # issue 13: priming p95 ≤ 50 ms at 100,000 items, query embedding included
EXPERIMENT_NOTES = (
    "graph_answers_checked",
    "graph_answers_tie_order_only",
    "graph_answers_differing",
    "optimize_s",
    "segments",
    "loop_stall_ms_without_index",
)


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def print_report(report: dict[str, Any]) -> None:
    print(
        "\n| items | primings | p50 ms | p95 ms | embed p50 | index p50 | graph p50 | rest p50 "
        "| ingest p50 ms | ingest p95 ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in report["sizes"]:
        p, i = r["priming"], r["ingestion"]
        rest = round(p["profile"]["p50_ms"] + p["rest"]["p50_ms"], 2)
        print(
            f"| {r['size']:,} | {p['primings']} | {p['total']['p50_ms']} | {p['total']['p95_ms']} "
            f"| {p['embed']['p50_ms']} | {p['index']['p50_ms']} | {p['graph']['p50_ms']} "
            f"| {rest} | {i['p50_ms']} | {i['p95_ms']} |"
        )
    print("\nMean split of one priming (ms): embed / index / graph / profile / rest = total")
    for r in report["sizes"]:
        p = r["priming"]
        split = " / ".join(
            str(p[k]["mean_ms"]) for k in ("embed", "index", "graph", "profile", "rest")
        )
        print(
            f"  {r['size']:>7,}: {split} = {p['total']['mean_ms']} "
            f"({p['index_calls_per_priming']:g} index queries a priming)"
        )
        print(f"           index by query: {p['index_mean_ms_by_query']}")
        print(
            f"           other processes used {p['other_processes_cpu_cores']} cores "
            f"(priming), {r['ingestion']['other_processes_cpu_cores']} (ingestion)"
        )
    for e in report.get("experiments", []):
        notes = [f"{e['primings']} primings"]
        notes += [f"{k} mean {e[k]['mean_ms']} ms" for k in ("index", "graph") if k in e]
        notes += [f"{k} {e[k]}" for k in EXPERIMENT_NOTES if k in e]
        print(
            f"experiment {e['change']}: p50 {e['total']['p50_ms']} ms, "
            f"p95 {e['total']['p95_ms']} ms, max {e['total']['max_ms']} ms ({'; '.join(notes)})"
        )
    largest = report["sizes"][-1]
    p95 = largest["priming"]["total"]["p95_ms"]
    verdict = "met" if p95 <= TARGET_P95_MS else "MISSED"
    print(
        f"\ntarget p95 ≤ {TARGET_P95_MS:g} ms at {largest['size']:,} items: {verdict} "
        f"({p95} ms); run took {report['run_s']} s"
    )
    if "profile" in report:
        print("\n" + report["profile"])
