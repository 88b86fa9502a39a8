"""bench/schedule_load.py at a tiny size on its manual clock: a test of the mechanism (every
heartbeat ran once, under the cap, through the fake's 429s), not of time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_virtual_run_misses_and_doubles_no_heartbeat_under_429s(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    done = subprocess.run(
        [
            sys.executable,
            "bench/schedule_load.py",
            "--virtual",
            "--animas",
            "30",
            "--minutes",
            "2",
            "--cap",
            "3",
            "--workers",
            "0",
            "--model-s",
            "0.01",
            "--tail-s",
            "5",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(out.read_text())
    assert result["heartbeats_expected"] > 30  # every Anima, about twice
    assert result["missed"] == 0
    assert result["doubled"] == 0
    assert result["extra_model_calls"] == 0  # a 429 asked again once, never an extra answer
    # The fake refuses a second request at once: the schedule ran into it, and slowed down.
    assert result["rate_limited_429"] > 0
    assert result["cap_lowest"] < 3
    assert result["peak_in_flight"] <= 3
