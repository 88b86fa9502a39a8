"""The database goes away under a running hub: PostgreSQL stopped, then started again.

Meanwhile the hub says `degraded` and names the database, refuses new messages with a 503
(nothing half-accepted: the sender sends again), and keeps the turn that was running when
the database went: once it is back, every accepted message has exactly one reply.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.e2e.hubproc import HubProcess, cli, free_port
from tests.e2e.test_crash_recovery import control, fake_llm, wait_for
from tests.sizes import size

pytestmark = pytest.mark.e2e
__all__ = ["fake_llm"]  # a fixture, used by name
OUTAGE_S = size(ci=6, full=30)


@dataclass
class PrivatePostgres:
    """A PostgreSQL cluster of this test's own, so stopping it disturbs no other test."""

    bindir: Path
    data: Path
    port: int
    user: str | None  # run its commands as this OS user (root may not run PostgreSQL)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://animahub@127.0.0.1:{self.port}/animahub"

    def run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
        # -l: the server must not hold our pipes open (run() would wait for it to exit).
        log = str(self.data.parent / "postgres.log")
        self.run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")


def _bindir() -> Path:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False)
        if (Path(out.stdout.strip()) / "initdb").exists():
            return Path(out.stdout.strip())
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not candidates:
        pytest.fail("PostgreSQL's initdb is not installed: run scripts/postgres.sh (make test)")
    return candidates[-1].parent


@pytest.fixture
def private_postgres() -> Iterator[PrivatePostgres]:
    root = Path(tempfile.mkdtemp(prefix="animahub-pg-"))
    user = "postgres" if os.geteuid() == 0 else None
    root.chmod(0o755)
    if user:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    pg = PrivatePostgres(_bindir(), root / "data", free_port(), user)
    pg.run("initdb", "-D", str(pg.data), "-U", "animahub", "--auth=trust", "-E", "UTF8")
    pg.start()
    engine = create_engine(
        f"postgresql+psycopg://animahub@127.0.0.1:{pg.port}/postgres",
        isolation_level="AUTOCOMMIT",
    )
    with engine.connect() as conn:
        conn.execute(text("CREATE DATABASE animahub"))
    engine.dispose()
    try:
        yield pg
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def chat(hub: HubProcess, message_id: str, timeout: float = 60) -> httpx.Response:
    payload = {"message": f"note {message_id}", "conversation_id": "s1", "user": "alice"}
    payload["message_id"] = message_id
    return httpx.post(
        f"{hub.url}/api/chat/aria", json=payload, headers=hub.owner(), timeout=timeout
    )


def health(hub: HubProcess) -> dict[str, Any]:
    # Generous: while the database is gone the hub's loop waits on its connects (see
    # docs/reliability.md, known limits), so an answer may take seconds.
    answer = httpx.get(f"{hub.url}/api/system/health", headers=hub.owner(), timeout=45)
    return answer.json()  # type: ignore[no-any-return]


def replies_by_message(pg: PrivatePostgres) -> dict[str, list[str]]:
    engine = create_engine(pg.url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                text(
                    "SELECT i.event_id, d.kind, d.status, d.text FROM inbox i "
                    "JOIN delivery d ON d.inbox_id = i.id ORDER BY d.created_at"
                )
            ).all()
    finally:
        engine.dispose()
    found: dict[str, list[str]] = {}
    for event_id, kind, status, reply in rows:
        found.setdefault(event_id, []).append(f"{kind}/{status}: {reply}")
    return found


def test_postgres_stopped_and_restarted_loses_nothing_and_doubles_nothing(
    tmp_path: Path, private_postgres: PrivatePostgres, fake_llm: str
) -> None:
    pg = private_postgres
    home = tmp_path / "home"
    assert cli(home, "init", "--demo").returncode == 0
    hub = HubProcess(
        home,
        free_port(),
        ANIMAHUB_STORAGE__DATABASE_URL=pg.url,
        ANIMAHUB_LLM__MODEL="openai/fake",
        ANIMAHUB_LLM__API_BASE=f"{fake_llm}/v1",
        ANIMAHUB_LLM__API_KEY="x",
    ).start()
    try:
        for n in range(3):
            assert chat(hub, f"before-{n}").status_code == 200
        # One turn is with the model when the database goes away.
        control(fake_llm, "hold_next")
        in_flight = threading.Thread(target=lambda: chat(hub, "in-flight", timeout=120))
        in_flight.start()
        wait_for(lambda: control(fake_llm, "held")["held"] == 1)

        pg.stop()
        wait_for(lambda: "database" in health(hub)["problems"])
        assert health(hub)["status"] == "degraded"
        refused = chat(hub, "during")
        assert refused.status_code == 503 and "database" in refused.json()["detail"]
        control(fake_llm, "release")  # the held turn ends while there is no database
        time.sleep(OUTAGE_S)
        pg.start()

        wait_for(lambda: health(hub)["status"] == "ok", timeout=60)
        assert chat(hub, "during").status_code == 200  # sent again, as the 503 asked
        in_flight.join(timeout=120)
        wait_for(lambda: "in-flight" in replies_by_message(pg), timeout=60)
        wait_for(
            lambda: all(r[0].startswith("reply/sent") for r in replies_by_message(pg).values()),
            timeout=60,
        )
        replies = replies_by_message(pg)
        expected = {f"before-{n}" for n in range(3)} | {"in-flight", "during"}
        assert set(replies) == expected
        for event_id, sent in replies.items():
            assert len(sent) == 1, (event_id, sent)  # exactly one reply each
            assert sent[0].startswith("reply/sent") and f"note {event_id}" in sent[0]
    finally:
        hub.stop()
    log = (home / "logs" / "hub.log").read_text()
    assert "works again" in log  # the parts that failed said so when they recovered
