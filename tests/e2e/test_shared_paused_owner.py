"""A paused owner (issue 48, test 1): messages in flight for one Anima on three `animahub
start` processes sharing one PostgreSQL (`[storage] shared`, docs/scale.md), with a model
(the fake OpenAI server in its own process).

1. The worker holding aria is stopped (SIGSTOP) while the model answers its turn: the model
   streams into a stopped process. Past its lease another worker answers everything; then
   the stopped one continues (SIGCONT) with its streamed answer in hand, and every write it
   tries is refused and counted in its health (`worker.refused`).
2. The holder's database connections are cut (pg_terminate_backend) while the model answers.

Either way every message is answered exactly once, in order.
`ANIMAHUB_SUITE_SIZE=full` sends 100 messages each time (tests/sizes.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.hubproc import HubProcess
from tests.e2e.shared import QUIET, UNPACED, balanced, running
from tests.e2e.test_crash_recovery import control, fake_llm
from tests.e2e.test_shared_processes import history, holder_pid, wait_for
from tests.sizes import size

__all__ = ["fake_llm"]  # the fixture
pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.timeout(600)]
MESSAGES = size(ci=20, full=100)


@pytest.fixture
def workers(tmp_path: Path, fake_llm: str) -> Iterator[list[HubProcess]]:
    model = {
        "ANIMAHUB_LLM__MODEL": "openai/fake",
        "ANIMAHUB_LLM__API_BASE": f"{fake_llm}/v1",
        "ANIMAHUB_LLM__API_KEY": "x",
    }
    with running(tmp_path / "home", {**QUIET, **UNPACED, **model}) as started:
        wait_for(lambda: balanced(started), timeout=120)  # aria's holder stays put
        yield started


def send_all(workers: list[HubProcess], conversation: str) -> list[threading.Thread]:
    """`MESSAGES` messages to aria in one conversation, through the workers in turn, each
    stored before the next is sent (so their order is known); their requests wait for the
    reply in threads (a stopped worker's never ends: it is let go)."""
    sent: list[threading.Thread] = []
    for n in range(MESSAGES):
        via = workers[n % len(workers)]
        body = {"message": f"message {n}", "conversation_id": conversation, "user": "alice"}
        thread = threading.Thread(target=_post, args=(via, body), daemon=True)
        thread.start()
        sent.append(thread)
        wait_for(lambda n=n, via=via: len(_people(via, conversation)) > n, timeout=60)
    return sent


def _post(worker: HubProcess, body: dict[str, Any]) -> None:
    with contextlib.suppress(httpx.TransportError):
        httpx.post(f"{worker.url}/api/chat/aria", json=body, headers=worker.owner(), timeout=300)


def _people(worker: HubProcess, conversation: str) -> list[str]:
    return [said for kind, said in history(worker, "aria", conversation) if kind == "person"]


def answered_once_in_order(worker: HubProcess, conversation: str) -> None:
    """Each message answered once, the answers in the order of the messages (all were sent
    before the first answer: the transcript has the messages, then the answers)."""
    said = history(worker, "aria", conversation)
    people = [text_ for kind, text_ in said if kind == "person"]
    answers = [text_ for kind, text_ in said if kind == "anima"]
    assert people == [f"message {n}" for n in range(MESSAGES)], said
    assert len(answers) == MESSAGES, said
    for n, answer in enumerate(answers):
        # The fake echoes the last thing it was asked, as the hub framed it for the model.
        assert answer.endswith(f"\nmessage {n}\n</message>"), (n, answers)


def test_a_stopped_owner_is_fenced_and_every_message_is_answered_once_in_order(
    workers: list[HubProcess], fake_llm: str
) -> None:
    owner = next(w for w in workers if w.proc is not None and w.proc.pid == holder_pid("aria"))
    others = [w for w in workers if w is not owner]
    assert owner.proc is not None

    control(fake_llm, "hold_next")
    send_all(workers, "stopped")
    wait_for(lambda: control(fake_llm, "held")["held"] == 1)  # the owner's first model call
    owner.proc.send_signal(signal.SIGSTOP)
    control(fake_llm, "release")  # the model streams its answer into a stopped process
    wait_for(lambda: len(history(others[0], "aria", "stopped")) == 2 * MESSAGES, timeout=240)
    answered_once_in_order(others[0], "stopped")

    owner.proc.send_signal(signal.SIGCONT)  # it goes on with the answer in hand
    refused = wait_for(lambda: owner.get("/api/system/health")["worker"]["refused"]["guarded"])
    assert refused > 0
    answered_once_in_order(others[1], "stopped")  # none of its writes took effect
    replies = [d for d in owner.get("/api/deliveries", limit=500) if d["kind"] == "reply"]
    assert len(replies) == MESSAGES and all(d["status"] == "sent" for d in replies)

    # Again, with the holder's database connections cut while the model answers, once the
    # revived worker has its share again (aria's holder stays put).
    wait_for(lambda: balanced(workers), timeout=120)
    holder = next(w for w in workers if w.proc is not None and w.proc.pid == holder_pid("aria"))
    assert holder.proc is not None
    control(fake_llm, "hold_next")
    send_all(workers, "cut")
    wait_for(lambda: control(fake_llm, "held")["held"] == 1)
    assert cut_connections(holder.proc.pid) > 0
    control(fake_llm, "release")
    wait_for(lambda: len(history(holder, "aria", "cut")) == 2 * MESSAGES, timeout=240)
    answered_once_in_order(holder, "cut")
    replies = [d for d in holder.get("/api/deliveries", limit=500) if d["kind"] == "reply"]
    assert len(replies) == 2 * MESSAGES and all(d["status"] == "sent" for d in replies)


def cut_connections(pid: int) -> int:
    """Terminate every database connection of the process `pid`; how many there were."""
    engine = create_engine(os.environ["ANIMAHUB_TEST_DATABASE_URL"])
    try:
        with engine.connect() as conn:
            cut = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name IN (:pool) OR application_name LIKE :listen"
                ),
                {"pool": f"animahub {pid}", "listen": f"animahub listen %:{pid}:%"},
            ).all()
            conn.commit()
    finally:
        engine.dispose()
    return sum(1 for (ok,) in cut if ok)
