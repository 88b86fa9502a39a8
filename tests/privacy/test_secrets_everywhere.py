"""Red team, issue 41 class 7: a credential is kept nowhere and shown nowhere.

- A platform token the platform refused: python-telegram-bot's error quotes it, and today
  the hub kept that error as the platform's reason (`animahub status`, health, the
  dashboard, the log). Now the reason names the token by its fingerprint only.
- Text reaching the database by a path that does not redact it itself (a task's title, an
  audit entry's details, a heartbeat's outcome, a row's error) is redacted by the engine,
  on SQLite and PostgreSQL, with the ORM and with Core statements alike.
"""

from __future__ import annotations

import logging
import random
import string
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import insert, text, update
from sqlmodel import col

from animahub_kit.contract.harness import eventually
from animahub_kit.contract.telegram_harness import open_harness
from hub.adapter import PlatformState
from hub.api.server import create_app
from hub.cli.status import _status_table
from hub.logs import RedactingFilter, RedactingFormatter
from hub.redaction.redact import fingerprint, remember_secrets
from hub.store.db import Database
from hub.store.models import AuditEntry, HeartbeatRun, InboxItem, Task, TaskEvent
from tests.conftest import owner_headers


def _fake(alphabet: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


# A token of Telegram's shape that the fake Bot API does not know: it answers 401.
REFUSED = "7012345678:AA" + _fake(string.ascii_letters + string.digits, 33, 41)


@pytest.fixture(autouse=True)
def _forget_configured() -> None:
    remember_secrets(())


async def test_a_refused_platform_token_is_shown_only_by_its_fingerprint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with open_harness(tmp_path, token=REFUSED) as h:
        await eventually(
            lambda: h.hub.platforms.status()["telegram"].state is PlatformState.UNAUTHORIZED
        )
        reason = h.hub.platforms.status()["telegram"].reason
        transport = httpx.ASGITransport(app=create_app(h.hub))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
            owner = owner_headers(h.hub.settings.home)
            health = (await c.get("/api/system/health", headers=owner)).json()
    shown = fingerprint(REFUSED)
    assert "refused" in reason and REFUSED not in reason and shown in reason
    assert REFUSED not in str(health) and health["credentials"]["telegram.bot_token"] == shown
    table = _status_table("http://127.0.0.1:1", 1, tmp_path, health)
    assert REFUSED not in str(table.columns[1]._cells)
    # The log: what the hub's file handlers write, and what its console shows.
    written = "\n".join(RedactingFormatter().format(r) for r in caplog.records)
    assert "refused" in written and REFUSED not in written
    console = RedactingFilter()
    for record in caplog.records:
        console.filter(record)
    assert REFUSED not in "\n".join(r.getMessage() for r in caplog.records)


KEY = "glpat-" + _fake(string.ascii_letters + string.digits, 20, 7)


def test_kept_columns_are_redacted_whoever_writes_them(db: Database) -> None:
    now = datetime.now(UTC)
    with db.session() as session:  # the ORM's unit of work
        task = Task(title=f"rotate {KEY}", details=f"old: {KEY}", manager="mika", assignee="kai")
        session.add(task)
        session.flush()
        assert task.id is not None
        session.add(TaskEvent(task_id=task.id, actor="kai", to_state="todo", note=KEY))
        session.add(AuditEntry(actor="web:eve", action="denied", detail={"args": [KEY]}))
    with db.write() as conn:  # Core: values in the statement, and executemany parameters
        conn.execute(update(Task).where(col(Task.id) == task.id).values(result=f"done {KEY}"))
        conn.execute(insert(HeartbeatRun).values(anima="mika", at=now, outcome=f"said {KEY}"))
        conn.execute(
            insert(AuditEntry),
            [{"actor": "x", "action": "a", "at": now, "detail": {"why": f"{KEY}"}}] * 2,
        )
    with db.session() as session:
        session.add(
            InboxItem(
                id="i1",
                platform="web",
                event_id="e1",
                address="web:local/general",
                conversation="c",
                channel_key="k",
                address_kind="channel",
                sender_key="web:eve",
                text=f"the open row keeps its text for the turn: {KEY}",
                error=f"model error (401): Incorrect API key provided: {KEY}",
            )
        )
    with db.engine.connect() as conn:
        for table in ("task", "task_event", "audit", "heartbeat_run"):
            dump = str(conn.execute(text(f'SELECT * FROM "{table}"')).all())
            assert KEY not in dump and "[REDACTED:gitlab-pat]" in dump, table
        inbox = conn.execute(text("SELECT text, error FROM inbox")).one()
    assert KEY in inbox.text  # redacted when its turn closes (hub/turns/inbox.py), not before
    assert KEY not in inbox.error
