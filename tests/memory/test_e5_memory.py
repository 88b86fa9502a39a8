"""The embedder gives back what a passage batch took (issue 47, "memory of the embedder").

ONNX Runtime's memory arena grew by ~180 MB with the first passage batch and kept it for
the life of the process, so a hub that had indexed one turn held it while idle. Measured
here as the process's resident memory (no time is measured)."""

from __future__ import annotations

from pathlib import Path

from hub.memory.e5_onnx import E5Onnx

PASSAGE = "The release moved to Friday because kai's build failed twice on the runner. " * 12


def resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_a_passage_batch_leaves_the_memory_it_used() -> None:
    engine = E5Onnx(threads=1)
    engine.encode(["warm-up"], is_query=True)
    before = resident_mb()
    for _ in range(3):
        engine.encode([PASSAGE] * 8, is_query=False)  # one run of 1,024 tokens each time
    grown = resident_mb() - before
    assert grown < 60, f"{grown:.0f} MB more after three passage batches"
