"""How big the reliability, fuzz and red-team suites run.

`make test` runs them at the `ci` size, which fits CI's time; `ANIMAHUB_SUITE_SIZE=full`
runs the full sizes behind the figures in docs/reliability.md.
"""

from __future__ import annotations

import os

SIZE = os.environ.get("ANIMAHUB_SUITE_SIZE", "ci")
if SIZE not in ("ci", "full"):
    raise RuntimeError(f"ANIMAHUB_SUITE_SIZE must be 'ci' or 'full', not {SIZE!r}")
FULL = SIZE == "full"


def size(ci: int, full: int) -> int:
    """The figure to use at this run's size."""
    return full if FULL else ci
