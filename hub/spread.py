"""Where in its interval each Anima's heartbeat beats: a stable offset from its name.

Planned at "one interval from now", every heartbeat of a hub started with a thousand Animas
fired in the same few seconds of each interval, so with a model that was a thousand model
calls at once. Each heartbeat instead beats at a fixed phase of its interval: its times are
`ANCHOR + offset + k * interval`, the offset a hash of the Anima's name. A hash, not a random
draw at start, so the phase is the same after a restart and in every process that plans the
schedule (several hub workers on one PostgreSQL plan the same trigger, and a job store that
holds it is not re-planned). Over many names the offsets spread evenly over the interval.

Crons are not spread: a cron names a time ("0 9 * * *" is a digest at nine), and moving it
would break what its author wrote. What a thousand crons at nine would do to the model is the
cap's to prevent (hub/model_gate.py): their model calls wait their turn.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.interval import IntervalTrigger

# Offsets count from here; midnight UTC, so an interval that divides a day (15, 30, 60
# minutes) beats at the same minutes past each hour, day after day.
ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)
_RESOLUTION = timedelta(milliseconds=1)


def offset(name: str, interval: timedelta) -> timedelta:
    """Where in `interval` the heartbeat of `name` beats, to the millisecond."""
    steps = interval // _RESOLUTION
    if steps <= 1:
        return timedelta(0)
    digest = hashlib.sha256(f"heartbeat:{name}".encode()).digest()
    return _RESOLUTION * (int.from_bytes(digest[:8], "big") % steps)


def heartbeat_trigger(name: str, minutes: int, timezone: str) -> IntervalTrigger:
    """Every `minutes`, at the Anima's own phase: its first beat is the next one after now
    (within one interval), not at once."""
    interval = timedelta(minutes=minutes)
    return IntervalTrigger(
        minutes=minutes, start_date=ANCHOR + offset(name, interval), timezone=timezone
    )
