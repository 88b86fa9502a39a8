"""Schedules across restarts (issue 48, test 3): Animas with heartbeats and a cron every
minute on three `animahub start` processes sharing one PostgreSQL and data root
(`[storage] shared`, docs/scale.md). The holder of some Animas is killed as one of their
slots comes due, then all three are killed and started again at once, and one worker's LISTEN
connection is cut while an Anima is paused through another. Every slot of every job ran
once (a `schedule_run` row: hub/schedule/slots.py) or is recorded skipped, each cron run
posted once, and the pause holds on every worker.

`ANIMAHUB_SUITE_SIZE=full` runs it with 100 Animas (tests/sizes.py)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine, text

from tests.e2e.hubproc import HubProcess
from tests.e2e.shared import initialised, launch
from tests.e2e.test_shared_processes import holder_pid, wait_for
from tests.sizes import size

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.timeout(600)]
ANIMAS = size(ci=12, full=100)
MINUTE = timedelta(minutes=1)
CRON = "## Tick\nschedule: * * * * *\ntype: llm\npost_to: web:local/general\nSay the time.\n"


def every_minute(home: Path) -> list[str]:
    """The demo Animas and copies of aria up to `ANIMAS`, each with a heartbeat and a cron
    every minute."""
    animas = home / "animas"
    for n in range(ANIMAS - 3):
        copy = animas / f"copy{n:03d}"
        shutil.copytree(animas / "aria", copy)
        toml = copy / "anima.toml"
        toml.write_text(toml.read_text().replace('name = "aria"', f'name = "copy{n:03d}"'))
    names = sorted(p.name for p in animas.iterdir() if (p / "anima.toml").exists())
    for name in names:
        toml = animas / name / "anima.toml"
        toml.write_text(toml.read_text().replace("interval_minutes = 30", "interval_minutes = 1"))
        (animas / name / "crons").mkdir(exist_ok=True)
        (animas / name / "crons" / "tick.md").write_text(CRON)
    assert len(names) == ANIMAS
    return names


@pytest.fixture
def engine() -> Iterator[Engine]:
    made = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    try:
        yield made
    finally:
        made.dispose()


def rows(engine: Engine, query: str, **params: Any) -> list[Any]:
    with engine.connect() as conn:
        return list(conn.execute(text(query), params))


def launch_three(home: Path, url: str) -> list[HubProcess]:
    return launch(home, url, {})


def kill_on_a_slot(engine: Engine, workers: list[HubProcess]) -> HubProcess:
    """SIGKILL the holder of aria the moment one of aria's jobs comes due."""
    victim = next(w for w in workers if w.proc is not None and w.proc.pid == holder_pid("aria"))
    due = rows(engine, "SELECT min(next_run_time) FROM scheduler_job WHERE id LIKE :p", p="%:aria%")
    wait_s = float(due[0][0]) - time.time()
    time.sleep(max(0.0, wait_s) + 0.05)  # the slot has come: its run may be under way
    victim.kill()
    return victim


def pause_with_a_listener_cut(engine: Engine, workers: list[HubProcess]) -> None:
    """Cut the first worker's LISTEN connection, pause kai through the last: every worker
    shows kai paused (its counter is read at least every second, hint or not)."""
    first, last = workers[0], workers[-1]
    assert first.proc is not None
    listening = f"animahub listen %:{first.proc.pid}:%"
    terminate = (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE :name"
    )
    # Once its listener has connected (a part of the worker started after its health answers).
    cut = wait_for(lambda: rows(engine, terminate, name=listening), timeout=60)
    assert all(ok for (ok,) in cut)
    paused = httpx.post(f"{last.url}/api/animas/kai/pause", headers=last.owner(), timeout=10)
    assert paused.status_code == 200, paused.text
    for worker in workers:
        assert wait_for(lambda w=worker: _paused(w, "kai"), timeout=30)
    resumed = httpx.post(f"{first.url}/api/animas/kai/resume", headers=first.owner(), timeout=10)
    assert resumed.status_code == 200, resumed.text
    for worker in workers:
        assert wait_for(lambda w=worker: not _paused(w, "kai") or None, timeout=30)


def _paused(worker: HubProcess, anima: str) -> bool:
    shown = worker.get("/api/dashboard/animas")["animas"]
    return bool(next(a for a in shown if a["name"] == anima)["paused"])


def test_every_slot_runs_once_or_is_recorded_through_kills_and_a_restart(
    tmp_path: Path, engine: Engine
) -> None:
    home = tmp_path / "home"
    url = initialised(home)
    names = every_minute(home)
    began = datetime.now(UTC)
    workers = launch_three(home, url)
    try:
        wait_for(lambda: _ran_everywhere(engine, names), timeout=150)
        killed = kill_on_a_slot(engine, workers)
        alive = [w for w in workers if w is not killed]
        time.sleep(15)  # its leases lapse (6 s) and the others run what it left
        for worker in alive:
            worker.kill()  # all three down at once ...
        workers = launch_three(home, url)  # ... and up again at once
        pause_with_a_listener_cut(engine, workers)
        settled_from = datetime.now(UTC) + MINUTE
        wait_for(lambda: _ran_everywhere(engine, names, settled_from), timeout=150)
    finally:
        for worker in workers:
            if worker.proc is not None and worker.proc.poll() is None:
                worker.stop(signal.SIGTERM)
    ended = datetime.now(UTC) - timedelta(seconds=5)
    _every_slot_accounted_for(engine, names, began, ended)
    _each_cron_run_posted_once(engine)


def _ran_everywhere(engine: Engine, names: list[str], since: datetime | None = None) -> bool:
    """Whether every Anima's heartbeat and cron have ended a slot (since `since`)."""
    found = rows(
        engine,
        "SELECT count(DISTINCT job_key) FROM schedule_run "
        "WHERE state = 'done' AND slot_at >= :since",
        since=since or datetime(2000, 1, 1, tzinfo=UTC),
    )
    return int(found[0][0]) >= 2 * len(names)


def _every_slot_accounted_for(
    engine: Engine, names: list[str], began: datetime, ended: datetime
) -> None:
    """Per job, the slots with a row are one minute apart, or a run says for how many
    earlier ones it stood in; nothing ran twice (one row per slot is the table's key) and
    nothing is left running."""
    slots: dict[str, list[tuple[datetime, str, int, int]]] = defaultdict(list)
    for key, at, state, stands_for, attempts in rows(
        engine,
        "SELECT job_key, slot_at, state, stands_for, attempts FROM schedule_run "
        "WHERE slot_at BETWEEN :began AND :ended ORDER BY job_key, slot_at",
        began=began,
        ended=ended,
    ):
        slots[key].append((at, state, stands_for, attempts))
    jobs = {f"heartbeat:{name}" for name in names}
    assert jobs <= set(slots), sorted(jobs - set(slots))
    assert len(slots) == 2 * len(names), sorted(slots)  # a heartbeat and a cron each
    again = 0
    for key, found in slots.items():
        assert all(state in ("done", "missed") for _, state, _, _ in found), (key, found)
        for (before, *_), (after, _, stands_for, _) in itertools.pairwise(found):
            assert after - before == MINUTE * (stands_for + 1), (key, found)
        again += sum(1 for *_, attempts in found if attempts > 1)
    # Run again only where a run was cut short by the kill (the killed worker's Animas).
    assert again <= 2 * len(names)


def _each_cron_run_posted_once(engine: Engine) -> None:
    ran = rows(
        engine, "SELECT count(*) FROM schedule_run WHERE job_key LIKE 'cron:%' AND state = 'done'"
    )[0][0]
    posted = rows(
        engine,
        "SELECT count(*) FROM delivery WHERE kind = 'report' AND idempotency_key LIKE 'cron:%'",
    )[0][0]
    assert posted == ran > 0, (posted, ran)
