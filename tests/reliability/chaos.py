"""A real hub (`animahub start`, tests/e2e/hubproc.py) killed with SIGKILL while a load runs.

The hub always listens on the same port, as a real one does: LINE's webhook URL and the web
clients keep working across restarts. Kills are timed by the load's progress: K points drawn
at random between 10 % and 90 % of the messages, each kill a random fraction of a second
after its point is passed (the hub is mid-turn, mid-send or mid-recovery, whatever it was
doing then), and the hub is started again at once.
"""

from __future__ import annotations

import concurrent.futures
import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.hubproc import HubProcess


@dataclass
class Kill:
    at_message: int  # messages sent when it was killed
    down_s: float  # from the kill until the new hub answered its health check


@dataclass
class Chaos:
    home: Path
    port: int
    env: dict[str, str]
    seed: int = 15
    kills: list[Kill] = field(default_factory=list)
    hub: HubProcess | None = None

    def start(self) -> HubProcess:
        self.hub = HubProcess(self.home, self.port, **self.env).start(timeout=120)
        return self.hub

    def kill_and_restart(self, at_message: int) -> None:
        assert self.hub is not None
        began = time.monotonic()
        self.hub.kill()
        self.start()
        self.kills.append(Kill(at_message, time.monotonic() - began))

    def run(
        self,
        load: concurrent.futures.Future[None],
        progress: Callable[[], int],
        total: int,
        count: int,
    ) -> None:
        """Kill `count` times while the load runs; returns when the load is done."""
        rng = random.Random(self.seed)
        points = sorted(rng.randint(total // 10, total * 9 // 10) for _ in range(count))
        for point in points:
            while progress() < point and not load.done():
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.5))
            self.kill_and_restart(progress())
        load.result(timeout=600)  # raises what the load raised

    def stop(self) -> None:
        if self.hub is not None and self.hub.proc is not None and self.hub.proc.poll() is None:
            self.hub.stop()

    def log(self) -> str:
        assert self.hub is not None
        return self.hub.log.read_text(errors="replace")


STILL_S = 10.0  # nothing left to do for this long: what is unanswered stays so


def settled(database: Path) -> bool:
    """Nothing left to do: every inbound row finished and every delivery sent or failed
    (a message the hub gave up on is never answered; the verdict then names it)."""
    with sqlite3.connect(database) as conn:
        busy = conn.execute(
            "SELECT (SELECT count(*) FROM inbox WHERE status IN ('received', 'processing'))"
            " + (SELECT count(*) FROM delivery WHERE status = 'pending')"
        ).fetchone()[0]
    return int(busy) == 0


def wait_until(check: Callable[[], bool], timeout_s: float, database: Path | None = None) -> bool:
    """Poll `check`; False when it did not come true in time, or when the hub at `database`
    has stayed settled for STILL_S without it (the verdict then says what is missing)."""
    deadline = time.monotonic() + timeout_s
    settled_since: float | None = None
    while time.monotonic() < deadline:
        if check():
            return True
        if database is not None and settled(database):
            settled_since = settled_since or time.monotonic()
            if time.monotonic() - settled_since > STILL_S:
                return False
        else:
            settled_since = None
        time.sleep(0.25)
    return False
