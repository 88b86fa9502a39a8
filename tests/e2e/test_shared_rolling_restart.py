"""A rolling restart (issue 48, test 4) on three `animahub start` processes sharing one
PostgreSQL (`[storage] shared`, docs/scale.md): people chat in 20 conversations through the
web chat while each worker in turn gets SIGTERM and comes back. A client whose request was
cut sends the same message again (the same `message_id`) through another worker, as the
web chat does. Every message is stored once, answered once, in order.

200 messages at CI size, 1,000 with `ANIMAHUB_SUITE_SIZE=full` (tests/sizes.py). Only the
web chat here: the platform fakes run in the test's process in the other shared tests."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.hubproc import HubProcess
from tests.e2e.shared import QUIET, UNPACED, running
from tests.sizes import size

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.timeout(900)]
MESSAGES = size(ci=200, full=1000)
CONVERSATIONS = 20
SPAN_S = 40.0  # each conversation's messages spread over this, so the restarts fall among them
ANIMAS = ("mika", "aria", "kai")


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[HubProcess]]:
    with running(tmp_path / "home", {**QUIET, **UNPACED}) as started:
        yield started


class Conversation:
    """One person's conversation with an Anima: messages sent one after another, each
    until some worker has taken it and streamed its answer to the end."""

    def __init__(self, number: int, workers: list[HubProcess]) -> None:
        self.anima = ANIMAS[number % len(ANIMAS)]
        self.id = f"c{number:02d}"
        self.user = f"person{number:02d}"
        self._workers = itertools.cycle(workers)
        self.sent: list[str] = []
        self.retries = 0

    def run(self, count: int) -> None:
        for n in range(count):
            text = f"{self.id} message {n}"
            body = {
                "message": text,
                "conversation_id": self.id,
                "user": self.user,
                "message_id": f"{self.id}-{n}",
            }
            while not self._answered(next(self._workers), body):
                self.retries += 1
                time.sleep(0.2)
            self.sent.append(text)
            time.sleep(SPAN_S / count)

    def _answered(self, worker: HubProcess, body: dict[str, str]) -> bool:
        try:
            with httpx.stream(
                "POST",
                f"{worker.url}/api/chat/{self.anima}",
                json=body,
                headers=worker.owner(),
                timeout=30,
            ) as response:
                if response.status_code != 200:
                    return False
                events = [json.loads(x[6:]) for x in response.iter_lines() if x[:6] == "data: "]
        except httpx.TransportError:
            return False  # the worker went away under the request: send it again elsewhere
        return bool(events) and events[-1] == {"type": "done"}


def test_a_rolling_restart_loses_doubles_and_reorders_nothing(
    workers: list[HubProcess],
) -> None:
    chats = [Conversation(n, workers) for n in range(CONVERSATIONS)]
    each = MESSAGES // CONVERSATIONS
    threads = [threading.Thread(target=c.run, args=(each,), daemon=True) for c in chats]
    for thread in threads:
        thread.start()
    time.sleep(SPAN_S / 8)
    for worker in workers:  # each in turn: stopped, and back on its port
        assert worker.stop(signal.SIGTERM) == 0
        time.sleep(1)
        worker.launch().ready(120)
        time.sleep(SPAN_S / 8)
    for thread in threads:
        thread.join(timeout=SPAN_S + 300)
        assert not thread.is_alive()

    last = workers[-1]
    for chat in chats:
        assert chat.sent == [f"{chat.id} message {n}" for n in range(each)]
        said = history_of(last, chat)
        assert [kind for kind, _ in said] == ["person", "anima"] * each, (chat.id, said)
        assert [text for kind, text in said if kind == "person"] == chat.sent
    engine = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    try:
        with engine.connect() as conn:
            stored, answered, replies, sent = conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM inbox), "
                    "(SELECT count(*) FROM inbox WHERE status = 'done'), "
                    "(SELECT count(DISTINCT inbox_id) FROM delivery WHERE kind = 'reply'), "
                    "(SELECT count(*) FROM delivery WHERE kind = 'reply' AND status = 'sent')"
                )
            ).one()
    finally:
        engine.dispose()
    assert stored == answered == replies == sent == MESSAGES  # once each: none lost, none doubled
    assert sum(c.retries for c in chats) > 0  # the restarts did cut requests


def history_of(worker: HubProcess, chat: Conversation) -> list[tuple[str, str]]:
    found = worker.get(
        f"/api/chat/{chat.anima}/history", conversation_id=chat.id, user=chat.user, limit=1000
    )
    return [(m["author_kind"], m["text"]) for m in found["messages"]]
