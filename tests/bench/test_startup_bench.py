"""bench/startup.py still runs against the code it measures (one run; nothing is timed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_startup_bench_runs_once() -> None:
    done = subprocess.run(
        [sys.executable, "bench/startup.py", "--runs", "1", "--settle", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    for figure in ("--help s", "health cpu s", "served (people list) s", "idle RSS MB"):
        assert figure in done.stdout
    assert "in 1 processes" in done.stdout  # an idle hub has started no model worker
