"""Three `animahub start` processes on one PostgreSQL and one data root with `[storage]
shared` (docs/scale.md), as an operator runs them: messages sent to any worker are answered
once each, in order, the web chat's stream included; a worker killed with SIGKILL is
replaced by the others once its leases lapse, and one stopped with SIGTERM hands over at
once."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from hub.store.leases import partition_of
from hub.store.ownership import PARTITIONS
from tests.e2e.hubproc import HubProcess
from tests.e2e.shared import QUIET, running

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
ANIMAS = ("mika", "aria", "kai")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[HubProcess]]:
    with running(tmp_path / "home", QUIET) as started:
        yield started


def chat(worker: HubProcess, anima: str, text_: str, conversation: str) -> list[dict[str, Any]]:
    """The web chat's request to `worker`: the events its stream gave, to the end."""
    body = {"message": text_, "conversation_id": conversation, "user": "alice"}
    with httpx.stream(
        "POST", f"{worker.url}/api/chat/{anima}", json=body, headers=worker.owner(), timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(x[6:]) for x in response.iter_lines() if x.startswith("data: ")]


def history(worker: HubProcess, anima: str, conversation: str) -> list[tuple[str, str]]:
    found = worker.get(f"/api/chat/{anima}/history", conversation_id=conversation, user="alice")
    return [(m["author_kind"], m["text"]) for m in found["messages"]]


def holder_pid(anima: str) -> int:
    """The pid of the worker holding the Anima's partition, once someone holds it."""
    return lease_holder_pid(f"partition:{partition_of(anima, PARTITIONS)}")


def lease_holder_pid(key: str) -> int:
    """The pid of the worker holding the lease `key` (a worker's name ends in its pid and a
    random tail: hub/store/ownership.py), once someone holds it."""
    engine = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    query = text("SELECT holder FROM lease WHERE key = :k AND expires_at > now()")
    try:
        with engine.connect() as conn:
            holder = wait_for(lambda: conn.execute(query, {"k": key}).scalar())
    finally:
        engine.dispose()
    return int(str(holder).split(":")[-2])


def wait_for(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.2)
    raise TimeoutError("condition not met")


def test_three_worker_processes_answer_each_message_once_through_kills_and_stops(
    workers: list[HubProcess],
) -> None:
    first = workers[0]
    # Each Anima asked twice, through every worker in turn: each answered once, in order.
    for n, anima in enumerate(ANIMAS):
        for turn in range(2):
            via = workers[(n + turn) % 3]
            events = chat(via, anima, f"question {turn} for {anima}", f"c-{anima}")
            assert events[-1] == {"type": "done"}, events
            assert "".join(e.get("text", "") for e in events)  # the reply, through the stream
    for anima in ANIMAS:
        said = history(first, anima, f"c-{anima}")
        assert [kind for kind, _ in said] == ["person", "anima", "person", "anima"], said
        assert said[0][1] == f"question 0 for {anima}" and said[2][1] == f"question 1 for {anima}"

    # SIGKILL the worker holding aria: another takes its partitions once its leases lapse.
    victim = next(w for w in workers if w.proc is not None and w.proc.pid == holder_pid("aria"))
    victim.kill()
    alive = [w for w in workers if w is not victim]
    events = chat(alive[0], "aria", "after the kill", "c-aria")
    assert events[-1] == {"type": "done"}, events
    assert wait_for(lambda: history(alive[1], "aria", "c-aria")[-1][0] == "anima")
    assert [k for k, _ in history(alive[1], "aria", "c-aria")].count("anima") == 3

    # SIGTERM the one holding kai now: the last worker answers it at once.
    stopping = next(w for w in alive if w.proc is not None and w.proc.pid == holder_pid("kai"))
    last = next(w for w in alive if w is not stopping)
    assert stopping.stop(signal.SIGTERM) == 0
    events = chat(last, "kai", "after the stop", "c-kai")
    assert events[-1] == {"type": "done"}, events
    said = history(last, "kai", "c-kai")
    assert [k for k, _ in said].count("anima") == 3 and said[-2][1] == "after the stop"
    deliveries = last.get("/api/deliveries", limit=100)
    replies = [d for d in deliveries if d["kind"] == "reply"]
    assert len(replies) == 8 and all(d["status"] == "sent" for d in replies)
