"""Where in its interval each Anima's heartbeat beats: a stable offset from its name.

Planned at "one interval from now", every heartbeat of a hub started with a thousand Animas
fired in the same few seconds of each interval, so with a model that was a thousand model
calls at once. Each heartbeat instead beats at a fixed phase of its interval: its times are
`ANCHOR + offset + k * interval`, the offset a hash of the Anima's name. A hash, not a random
draw at start, so the phase is the same after a restart and in every process that plans the
schedule (several hub workers on one PostgreSQL plan the same trigger, and a job store that
holds it is not re-planned).

A hash alone spreads like a random draw: with 1,000 Animas on a 5-minute interval some
second got 10 beats against a mean of 3.3 (bench/README.md). So no second of the interval
takes more than twice the mean, or two where the mean is under one (two beats in a second
are no burst): the Animas sharing an interval are placed in
the order of their hashed offsets, and one whose second is full takes the next second that is
not. An Anima added later moves only those placed after it in a run of full seconds, by a
second or so; every other phase stays where it was.

Crons are not spread: a cron names a time ("0 9 * * *" is a digest at nine), and moving it
would break what its author wrote. What a thousand crons at nine would do to the model is the
cap's to prevent (hub/model/gate.py): their model calls wait their turn.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from apscheduler.triggers.interval import IntervalTrigger

# Offsets count from here; midnight UTC, so an interval that divides a day (15, 30, 60
# minutes) beats at the same minutes past each hour, day after day.
ANCHOR = datetime(2000, 1, 1, tzinfo=UTC)
_RESOLUTION = timedelta(milliseconds=1)
_SECOND = timedelta(seconds=1)


def offset(name: str, interval: timedelta) -> timedelta:
    """Where in `interval` the hash of `name` would place its heartbeat, to the millisecond."""
    steps = interval // _RESOLUTION
    if steps <= 1:
        return timedelta(0)
    digest = hashlib.sha256(f"heartbeat:{name}".encode()).digest()
    return _RESOLUTION * (int.from_bytes(digest[:8], "big") % steps)


def offsets(names: Iterable[str], interval: timedelta) -> dict[str, timedelta]:
    """Each name's phase in `interval`: its hashed offset, moved on to the next second with
    room when its own second already holds twice the mean (see above)."""
    wanted = sorted((offset(name, interval), name) for name in set(names))
    seconds = max(1, interval // _SECOND)
    room = max(2, (2 * len(wanted)) // seconds)
    taken: Counter[int] = Counter()
    placed: dict[str, timedelta] = {}
    for at, name in wanted:
        second = at // _SECOND
        while taken[second % seconds] >= room:
            second += 1
        taken[second % seconds] += 1
        placed[name] = (at + (second - at // _SECOND) * _SECOND) % interval
    return placed


def heartbeat_trigger(phase: timedelta, minutes: int, timezone: str) -> IntervalTrigger:
    """Every `minutes`, at `phase` into each interval (`offsets`): its first beat is the next
    one after now (within one interval), not at once."""
    return IntervalTrigger(minutes=minutes, start_date=ANCHOR + phase, timezone=timezone)
