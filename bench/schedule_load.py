"""A thousand Animas on one schedule, against a model that rate-limits.

`--animas` copies of a demo Anima (an engineer) beat every `--interval` minutes for
`--minutes`. Before each interval every Anima is given something to report (a failed turn,
written straight into the inbox), so every heartbeat asks the model. The model is the fake
OpenAI server (animahub_kit/fakes) in its own process, answering after `--model-s` and holding a
standing rate limit: `--rate` requests a second (default 1.25 × the mean the schedule
needs) with Retry-After `--retry-after`; past it, 429. The hub runs in this process with its
real model workers and `[scheduler] max_model_calls = --cap`.

Measured: heartbeats per second (by when each posted, on the hub's clock) against the mean,
heartbeats missed (a phase time in the window with no post) and doubled (a post twice for
one time, or a successful model call more than there are posts), the 429s the fake gave and
how low the cap went, the most model calls the fake answered at once, and the peak resident
memory of the hub process plus its model workers (the fake's process excluded).

`--virtual` runs the hub on a manual clock stepped a second at a time, as fast as the hub
goes: a test of the mechanism (tests/schedule/test_schedule_load.py), not of time. There
the fake refuses a second request at once instead of counting per second (its seconds are
not the hub's).

    .venv/bin/python bench/schedule_load.py [--animas 1000] [--minutes 10] [--interval 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from sqlalchemy import insert
from sqlmodel import col, select

from hub.app import Hub
from hub.clock import Clock, ManualClock, SystemClock
from hub.schedule.spread import ANCHOR, offsets
from hub.settings import load_settings
from hub.store.models import DeliveryRow, InboxItem, InboxStatus

ROOT = Path(__file__).resolve().parents[1]
_KEY = re.compile(r"^heartbeat:(?P<anima>[^@]+)@(?P<at>[^>]+)>")


def start_fake() -> tuple[subprocess.Popen[str], str]:
    fake = subprocess.Popen(
        [sys.executable, "-m", "animahub_kit.fakes.openai_server", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert fake.stdout is not None
    line = fake.stdout.readline().strip()
    if not line.startswith("READY "):
        fake.kill()
        raise RuntimeError(f"the fake model did not start: {line!r}")
    return fake, line.removeprefix("READY ")


def rss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"VmRSS:\s+(\d+)", text)
    return int(found.group(1)) if found else 0


def hub_processes(exclude: int) -> list[int]:
    """This process and its children (the model workers), not the fake."""
    me = os.getpid()
    kids = Path(f"/proc/{me}/task/{me}/children").read_text().split()
    return [me, *(int(k) for k in kids if int(k) != exclude)]


def make_hub(home: Path, url: str, args: argparse.Namespace, clock: Clock) -> Hub:
    settings = load_settings(
        home=home,
        llm={
            "model": "openai/bench",
            "api_base": f"{url}/v1",
            "api_key": "x",
            "workers": args.workers,
        },
        memory={"enabled": False},
        scheduler={"enabled": not args.virtual, "max_model_calls": args.cap},
        runtime={"person_messages_per_minute": 1e9, "person_burst": 10**9},
    )
    return Hub(settings, clock=clock)


def add_copies(hub: Hub, count: int, minutes: int) -> list[str]:
    names = [f"copy{n:04d}" for n in range(count)]
    for name in names:
        anima = hub.create_anima(name, "engineer", None)
        toml = anima.path / "anima.toml"
        text = re.sub(r"interval_minutes = \d+", f"interval_minutes = {minutes}", toml.read_text())
        toml.write_text(text)
    hub.animas.load()
    return names


def give_news(hub: Hub, names: list[str], now: datetime) -> None:
    """One failed turn for every Anima: something its next heartbeat reports."""
    rows = [
        {
            "id": str(uuid.uuid4()),
            "platform": "web",
            "event_id": str(uuid.uuid4()),
            "address": "web:local/general",
            "conversation": "web:local/general",
            "channel_key": "web:local/general",
            "address_kind": "channel",
            "sender_key": "bench",
            "text": "a message the bench says could not be answered",
            "mentions": [],
            "attachments": [],
            "raw": {},
            "status": InboxStatus.FAILED,
            "anima": name,
            "received_at": now,
            "finished_at": now,
        }
        for name in names
    ]
    with hub.db.write() as conn:
        conn.execute(insert(InboxItem), rows)


async def workers_ready(hub: Hub) -> None:
    """Wait for the model workers to have imported litellm (seconds on a busy machine):
    heartbeats due before then would all wait for them, and start the window bunched."""
    workers = hub.model_workers
    if workers is not None:
        workers.start()  # a hub starts them with its first model call; here, before the window
    while workers is not None and workers.status()["ready"] < workers.status()["configured"]:  # noqa: ASYNC110
        await asyncio.sleep(0.2)


class Sampler:
    def __init__(self, hub: Hub, fake_pid: int) -> None:
        self.hub, self.fake_pid = hub, fake_pid
        self.peak_rss_kb = 0
        self.lowest_limit = hub.model_gate.state.max_calls

    def sample(self) -> None:
        total = sum(rss_kb(pid) for pid in hub_processes(self.fake_pid))
        self.peak_rss_kb = max(self.peak_rss_kb, total)
        self.lowest_limit = min(self.lowest_limit, self.hub.model_gate.state.limit)


async def drive_real(hub: Hub, names: list[str], args: argparse.Namespace, s: Sampler) -> None:
    interval = timedelta(minutes=args.interval)
    end = hub.clock.now() + timedelta(minutes=args.minutes)
    next_news = hub.clock.now()
    first = next_news
    while hub.clock.now() < end:
        # Stamped with its planned time, so that pieces of news are exactly an interval
        # apart, and written a little ahead of it, so that a heartbeat due just after finds
        # it already there: stamped when this loop came round (late by up to a second, and
        # drifting), a gap of more than an interval left the heartbeats due in its excess
        # with nothing new to report, counted as missed (44 in a 1-minute run).
        if hub.clock.now() >= next_news - NEWS_AHEAD:
            give_news(hub, names, next_news)
            next_news = news_after(first, next_news, interval)
        s.sample()
        await asyncio.sleep(0.5)


async def drive_virtual(hub: Hub, names: list[str], args: argparse.Namespace, s: Sampler) -> None:
    clock = hub.clock
    assert isinstance(clock, ManualClock)
    interval = timedelta(minutes=args.interval)
    hub.scheduler.open()
    await hub.on_tick()
    end = clock.now() + timedelta(minutes=args.minutes)
    next_news = clock.now()
    first = next_news
    while clock.now() < end:
        if clock.now() >= next_news:
            give_news(hub, names, clock.now())
            next_news = news_after(first, next_news, interval)
        clock.advance(timedelta(seconds=1))
        hub.scheduler.tick()
        # As fast as the hub goes: the second ends when every run is done or waits out a
        # pause or its paced start (which only the clock's next step can end).
        while hub.scheduler.running and not waits_for_the_clock(hub):  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        s.sample()
    while hub.scheduler.running:  # the last second's runs finish
        clock.advance(timedelta(seconds=1))
        await asyncio.sleep(0.05)


def waits_for_the_clock(hub: Hub) -> bool:
    """Every running heartbeat waits at the gate, and the gate for a time: only then is
    nothing left to do in this second. A call in flight or a post being written is real
    work; stepping the clock past it made runs tens of virtual seconds late, and one late
    by an interval was coalesced with its next time and missed (a CI run on 2 cores)."""
    gate = hub.model_gate.state
    timed = gate.paused_until is not None or gate.next_start is not None
    return timed and gate.in_flight == 0 and gate.waiting == hub.scheduler.running


NEWS_AHEAD = timedelta(seconds=3)  # how long before its stamp news is written (real clock)


def news_after(first: datetime, last: datetime, interval: timedelta) -> datetime:
    """When the next news is given: a little before each interval's end, so that a
    heartbeat due just after the boundary does not find it still missing (the bench's own
    loop is late by up to a second or more on a busy machine). Every heartbeat's window
    (one interval, since the last) then holds exactly one piece of news."""
    lead = min(timedelta(seconds=10), interval / 4)
    k = (last + lead - first) // interval + 1
    return first + k * interval - lead


def expected(names: list[str], interval: timedelta, begin: datetime, end: datetime) -> set[Any]:
    """Every (Anima, phase time) in (begin, end]: what must have run exactly once."""
    slots = set()
    phases = offsets(names, interval)
    for name in names:
        at = ANCHOR + phases[name]
        at += interval * max(0, (begin - at) // interval)
        while at <= end:
            if at > begin:
                slots.add((name, at))
            at += interval
    return slots


def measure(
    hub: Hub, names: list[str], args: argparse.Namespace, begin: datetime
) -> dict[str, Any]:
    with hub.db.session() as session:
        rows = session.exec(
            select(col(DeliveryRow.idempotency_key), col(DeliveryRow.created_at)).where(
                DeliveryRow.kind == "heartbeat"
            )
        ).all()
    runs: Counter[tuple[str, datetime]] = Counter()
    per_second: Counter[int] = Counter()
    late: dict[int, list[float]] = {}  # for each second, how late each of its posts was
    for key, created in rows:
        found = _KEY.match(key)
        if found is None:
            continue
        at = datetime.fromisoformat(found["at"])
        runs[(found["anima"], at)] += 1
        second = int(created.replace(tzinfo=UTC).timestamp())
        per_second[second] += 1
        late.setdefault(second, []).append(
            round((created.replace(tzinfo=UTC) - at).total_seconds(), 2)
        )
    interval = timedelta(minutes=args.interval)
    # The window: whole intervals after the first news, less the last interval's tail
    # (a heartbeat due in the last seconds may still be waiting for the model).
    end = begin + timedelta(minutes=args.minutes) - timedelta(seconds=args.tail_s)
    want = expected(names, interval, begin, end)
    seconds = max(1.0, (end - begin).total_seconds())
    mean = len(want) / seconds
    missed = sorted(want - set(runs), key=lambda slot: slot[1])
    return {
        "heartbeats_expected": len(want),
        "missed": len(missed),
        "missed_first": [f"{name}@{(at - begin).total_seconds():.0f}s" for name, at in missed[:5]],
        "doubled": sum(1 for n in runs.values() if n > 1),
        "posted": sum(runs.values()),
        "mean_per_s": round(mean, 2),
        "max_per_s": max(per_second.values(), default=0),
        "late_s_max": max((s for lates in late.values() for s in lates), default=0.0),
        # The busiest seconds and how late each post in them was: on time (a second or
        # less) is the plan's doing, later is a wait for the gate or a 429's pause.
        "busiest": [
            {"at": second, "posts": n, "late_s": sorted(late[second])}
            for second, n in per_second.most_common(5)
        ],
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    fake, url = start_fake()
    try:
        mean = args.animas / (args.interval * 60)
        limit: dict[str, Any] = {"retry_after": args.retry_after, "latency_s": args.model_s}
        if args.virtual:
            limit["max_in_flight"] = 1  # two due in one second: one is refused
        else:
            rate = args.rate or 1.25 * mean
            limit.update(per_second=rate, burst=max(1.0, rate))
        async with httpx.AsyncClient() as control:
            (await control.post(f"{url}/_control/rate_limit", json=limit)).raise_for_status()
        with tempfile.TemporaryDirectory() as tmp:
            start = datetime.now(UTC).replace(microsecond=0)
            clock: Clock = ManualClock(start) if args.virtual else SystemClock()
            hub = make_hub(Path(tmp), url, args, clock)
            await hub.start()
            await workers_ready(hub)
            began_setup = time.perf_counter()
            names = add_copies(hub, args.animas, args.interval)
            setup_s = time.perf_counter() - began_setup
            sampler = Sampler(hub, fake.pid)
            while not args.virtual and len(hub.scheduler.upcoming()) < args.animas:  # noqa: ASYNC110
                await asyncio.sleep(0.2)  # the scheduler's next tick plans the copies
            begin = hub.clock.now()
            wall = time.perf_counter()
            if args.virtual:
                await drive_virtual(hub, names, args, sampler)
            else:
                await drive_real(hub, names, args, sampler)
            result = measure(hub, names, args, begin)
            async with httpx.AsyncClient() as control:  # as the posts were counted
                stats = (await control.get(f"{url}/_control/rate_limit_stats")).json()
            await hub.stop()
    finally:
        fake.terminate()
        fake.wait(10)
    accepted = Counter(int(t) for t in stats["accepted_at"])
    return {
        "animas": args.animas,
        "interval_min": args.interval,
        "minutes": args.minutes,
        "cap": args.cap,
        "virtual": args.virtual,
        **result,
        "model_calls_ok": stats["accepted"],
        "extra_model_calls": stats["accepted"] - result["posted"],
        "model_calls_max_per_s": max(accepted.values(), default=0),
        "rate_limited_429": stats["refused"],
        "cap_lowest": sampler.lowest_limit,
        "peak_in_flight": stats["peak_in_flight"],
        "peak_rss_mb": round(sampler.peak_rss_kb / 1024),
        "setup_s": round(setup_s, 1),
        "run_wall_s": round(time.perf_counter() - wall, 1),
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--animas", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=10.0, help="how long it runs")
    parser.add_argument("--interval", type=int, default=1, help="heartbeat minutes")
    parser.add_argument("--cap", type=int, default=8, help="[scheduler] max_model_calls")
    parser.add_argument("--rate", type=float, default=0.0, help="the fake's requests/s")
    parser.add_argument("--retry-after", type=float, default=1.0)
    parser.add_argument("--model-s", type=float, default=0.05, help="the model's answer time")
    parser.add_argument("--workers", type=int, default=1, help="[llm] workers")
    parser.add_argument("--tail-s", type=float, default=60.0, help="end of the window left out")
    parser.add_argument("--virtual", action="store_true", help="a manual clock, stepped")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--log", type=Path, help="the hub's log (INFO) goes here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    parsed = parse()
    if parsed.log:
        logging.basicConfig(
            filename=parsed.log, level=logging.INFO, format="%(asctime)s %(name)s %(message)s"
        )
    figures = asyncio.run(main(parsed))
    print(json.dumps(figures, indent=2))
    if parsed.json:
        parsed.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
