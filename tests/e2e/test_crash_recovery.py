"""A hub killed with SIGKILL mid-turn answers the message once after a restart."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.hubproc import HubProcess, alive, child_pids, cli, free_port

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake_llm() -> Iterator[str]:
    """The fake OpenAI server in its own process, so it outlives the hub we kill."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "animahub_kit.fakes.openai_server", "--port", str(port)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("READY"), line
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def control(fake: str, action: str, **body: Any) -> Any:
    if action == "requests" or action == "held":
        return httpx.get(f"{fake}/_control/{action}", timeout=5).json()
    return httpx.post(f"{fake}/_control/{action}", json=body, timeout=5).json()


def wait_for(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError("condition not met")


def test_sigkill_mid_turn_then_restart_answers_once(tmp_path: Path, fake_llm: str) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo").returncode == 0
    llm_env = {
        "ANIMAHUB_LLM__MODEL": "openai/fake",
        "ANIMAHUB_LLM__API_BASE": f"{fake_llm}/v1",
        "ANIMAHUB_LLM__API_KEY": "x",
    }
    control(fake_llm, "hold_next")
    hub = HubProcess(home, free_port(), **llm_env).start()
    owner = hub.owner()
    payload = {
        "message": "Please summarise the plan",
        "conversation_id": "s",
        "user": "alice",
        "message_id": "msg-1",
    }

    def send_and_lose_connection() -> None:
        # The hub dies under this request: that is the point.
        with contextlib.suppress(httpx.TransportError):
            httpx.post(f"{hub.url}/api/chat/aria", json=payload, headers=owner, timeout=60)

    sender = threading.Thread(target=send_and_lose_connection)
    sender.start()
    wait_for(lambda: len(control(fake_llm, "requests")) == 1)  # the turn is at the model
    assert hub.proc is not None
    workers = child_pids(hub.proc.pid, "hub.model.worker")
    assert len(workers) == 1  # [llm] workers = 1: the call is in that process
    hub.kill()
    sender.join(timeout=30)
    wait_for(lambda: not any(alive(pid) for pid in workers))  # no orphan outlives its hub
    control(fake_llm, "release")
    control(fake_llm, "queue_reply", text="Here is the plan, once.")

    hub = HubProcess(home, free_port(), **llm_env).start()
    try:

        def answered() -> bool:
            messages = hub.get("/api/chat/aria/history", conversation_id="s", user="alice")[
                "messages"
            ]
            return any(m["author_kind"] == "anima" for m in messages)

        wait_for(answered)
        history = hub.get("/api/chat/aria/history", conversation_id="s", user="alice")["messages"]
        assert [(m["author_kind"], m["text"]) for m in history] == [
            ("person", "Please summarise the plan"),
            ("anima", "Here is the plan, once."),
        ]
        assert len(control(fake_llm, "requests")) == 2  # the killed attempt and the retry
        deliveries = hub.get("/api/deliveries")
        assert [(d["kind"], d["status"]) for d in deliveries] == [("reply", "sent")]

        # The client retries its request after the crash: the same answer, no new turn.
        answer = httpx.stream(
            "POST", f"{hub.url}/api/chat/aria", json=payload, headers=hub.owner(), timeout=30
        )
        with answer as r:
            events = [json.loads(x[6:]) for x in r.iter_lines() if x.startswith("data: ")]
        assert events[-1] == {"type": "done"}
        assert "".join(e.get("text", "") for e in events) == "Here is the plan, once."
        assert len(control(fake_llm, "requests")) == 2
        assert len(hub.get("/api/deliveries")) == 1
    finally:
        hub.stop()
