"""How long memory's calls take, as the dashboard's charts show it: a bounded ring of the
latest durations, percentiles computed when asked (never on the turn's path)."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

RING = 1000  # durations kept: enough for stable percentiles, a few KB of floats


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0 ≤ q ≤ 1) by linear interpolation between the closest ranks (as
    numpy's default), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class Durations:
    """Durations in milliseconds: the latest `size` of them, and how many since start."""

    def __init__(self, size: int = RING) -> None:
        self._latest: deque[float] = deque(maxlen=size)
        self.count = 0

    def add(self, ms: float) -> None:
        self._latest.append(ms)
        self.count += 1

    def summary(self) -> dict[str, float | int | None]:
        """p50 and p95 over the latest durations (rounded to 0.1 ms), and the count since
        start: what `GET /api/stats` gives as `recall_ms`."""
        latest = list(self._latest)
        p50, p95 = percentile(latest, 0.5), percentile(latest, 0.95)
        return {
            "p50": None if p50 is None else round(p50, 1),
            "p95": None if p95 is None else round(p95, 1),
            "count": self.count,
        }
