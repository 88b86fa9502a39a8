"""Secrets a person pastes are kept nowhere after the turn: not in the database (turn log,
inbox, deliveries, audit, tasks and their events, report turns), the logs, the memory files
or any API answer, and the offline mode and the model's reply never repeat one to the chat.
Nor is the hub's own model API key, when the provider's error quotes it."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import inspect, text
from sqlmodel import select

from hub.api.server import create_app
from hub.app import Hub
from hub.logs import configure
from hub.store.models import AuditEntry, Task
from hub.tasks.delegation import Request
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers

# Each one in the shape its provider issues (hub/redaction/redact.py); values made up.
SECRETS = {
    "openai": "sk-proj-Q7fLm2Xv9TzR4kWp8NbY3cHd6JsA1eGu",
    "aws": "AKIAQ3JW5MPLR7KEY2ZZ",
    "github": "ghp_Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0GfEdCbA98",
    "password": "Tr0ub4dor&3-horse",
    "dsn": "s3cr3t-Pg-pass",
    "telegram": "7012345678:AAHd3kQw9Zr2LmXp8vT1nYb6Cf0sJ4gU7eQ",
    "huggingface": "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",
    "gitlab": "glpat-x8Kf2Qm9Zr4Lw7Np1Tb3",
    "npm": "npm_Q7fLm2Xv9TzR4kWp8NbY3cHd6JsA1eGuZx5W",
    "sendgrid": "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",
    "pass": "blue-Falcon-42",
    "pw": "Gr33nTea!",
    # the hub's own model key, in no provider's shape: redacted because it is configured
    "model_key": "local-llm-key-kept-in-secrets-env",
}
MESSAGES = [
    f"our OpenAI key is {SECRETS['openai']} for the demo",
    f"AWS access key {SECRETS['aws']} goes in the vault",
    f"use token ghp for CI: {SECRETS['github']}",
    f"the staging password: {SECRETS['password']} rotates monthly",
    f"connect with postgresql://deploy:{SECRETS['dsn']}@db.internal:5432/app",
    f"the bot's token {SECRETS['telegram']} is the new one",
    f"login with {SECRETS['huggingface']} then push",
    f"CI uses {SECRETS['gitlab']} and {SECRETS['npm']}",
    f"mail goes out with {SECRETS['sendgrid']}",
    f"wifi pass: {SECRETS['pass']} and the router pw {SECRETS['pw']}",
]


@pytest.fixture
def logs_to_home(home: Path) -> Iterator[None]:
    configure(home, level="DEBUG", console=False)
    try:
        yield
    finally:
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
            handler.close()


@pytest.fixture(params=["offline", "model"])
async def talk(
    request: pytest.FixtureRequest, home: Path, logs_to_home: None, fake_openai: Any
) -> AsyncIterator[tuple[httpx.AsyncClient, Hub, str]]:
    llm: dict[str, Any] = {}
    if request.param == "model":
        llm = {"model": "openai/fake", "api_base": f"{fake_openai.url}/v1"}
        llm["api_key"] = SECRETS["model_key"]
        llm["workers"] = 0
    hub = Hub(make_settings(home, hub={"default_anima": "mika", "admins": ["web:root"]}, llm=llm))
    await hub.start()
    add_demo_animas(hub)
    transport = httpx.ASGITransport(app=create_app(hub))
    try:
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://localhost",
            headers=owner_headers(hub.settings.home),
        ) as http:
            yield http, hub, request.param
    finally:
        await hub.stop()


def leaks(where: str, found: str) -> list[str]:
    lowered = found.casefold()  # a command may lowercase what it repeats
    return [f"{name} in {where}" for name, value in SECRETS.items() if value.casefold() in lowered]


def database_leaks(hub: Hub) -> list[str]:
    """Each secret found in a row of any table."""
    found: list[str] = []
    with hub.db.engine.connect() as conn:
        for table in inspect(conn).get_table_names():
            rows = conn.execute(text(f'SELECT * FROM "{table}"'))
            dump = "\n".join(json.dumps([str(v) for v in row]) for row in rows)
            found += leaks(f"the {table} table", dump)
    return found


def files_text(root: Path) -> str:
    return "\n".join(
        path.read_text(errors="replace") for path in sorted(root.rglob("*")) if path.is_file()
    )


async def test_pasted_secrets_are_kept_nowhere(
    talk: tuple[httpx.AsyncClient, Hub, str], fake_openai: Any, home: Path
) -> None:
    client, hub, mode = talk
    streamed = []
    for i, message in enumerate(MESSAGES):
        if mode == "model":
            # The worst model: it repeats what it was told.
            fake_openai.queue_reply(f"Understood, I noted: {message}")
        response = await chat(client, "aria", message=message, message_id=f"m{i}")
        assert response.status_code == 200
        events = sse_events(response.text)
        assert events[-1] == {"type": "done"}, events
        streamed.append("".join(e.get("text", "") for e in events))
    # a failing command quoting its argument, a refused one (audited with its arguments),
    # and a channel post
    await chat(client, "aria", message=f"/anima status {SECRETS['openai']}", message_id="c1")
    refused = f"/anima delegate kai deploy with {SECRETS['gitlab']}"
    await chat(client, "aria", message=refused, message_id="c2")
    if mode == "model":  # the provider refuses the key, quoting it
        quoted = f"Incorrect API key provided: {SECRETS['model_key']}."
        fake_openai.fail_next(status=401, retry_after=None, message=quoted)
        failed = await chat(client, "aria", message="one more question", message_id="m-401")
        streamed.append(failed.text)
        fake_openai.queue_reply(f"Rotated {SECRETS['npm']} as asked.")  # the task's report
    # a task whose title and body hold secrets, run to its report
    made = hub.delegation.delegate(
        Request(
            manager="mika",
            to="kai",
            title=f"rotate {SECRETS['npm']}",
            details=f"old one: {SECRETS['sendgrid']}",
            origin=hub.delegation.home_channel("mika", "kai"),
            by_admin=True,
        ),
        actor="web:root",
    )
    post = await client.post(
        "/api/channels/general/posts",
        json={"text": f"@aria the password: {SECRETS['password']}", "user": "alice"},
    )
    assert post.status_code in (200, 201, 202), post.text
    for _ in range(500):  # the channel post's turn and the task run on after their call
        if not hub.inbox.unfinished() and hub.tasks.get(made.task.id).state.value == "done":
            break
        await asyncio.sleep(0.02)
    assert hub.tasks.get(made.task.id).state.value == "done"
    assert hub.memory is not None
    await hub.memory.drain()
    hub.memory.flush_access()

    found = []
    found += leaks("the streamed replies", "\n".join(streamed))
    history = await client.get(
        "/api/chat/aria/history", params={"conversation_id": "s1", "user": "alice"}
    )
    assert history.status_code == 200 and len(history.json()["messages"]) >= len(MESSAGES)
    found += leaks("the history API", history.text)
    found += leaks("the channel API", (await client.get("/api/channels/general/posts")).text)
    found += leaks("the deliveries API", (await client.get("/api/deliveries")).text)
    found += leaks("the health API", (await client.get("/api/system/health")).text)
    found += leaks("the tasks API", (await client.get(f"/api/tasks/{made.task.id}")).text)
    search = await client.get("/api/animas/aria/memory/search", params={"q": "key password"})
    found += leaks("the memory search API", search.text)
    found += database_leaks(hub)
    found += leaks("the logs", files_text(home / "logs"))
    found += leaks("the memory files", files_text(home / "animas") + files_text(home / "shared"))
    # Nor as the old text of a row, in the SQLite file's free space or its write-ahead log.
    found += leaks("the data folder's files", files_text(home))
    assert found == []
    # Redacted, not dropped: what was said is still there around the placeholder.
    assert "[REDACTED:sk-api-key]" in history.text and "for the demo" in history.text
    with hub.db.session() as session:  # where the secrets were, the placeholders are
        audit = session.exec(select(AuditEntry).where(AuditEntry.action == "denied")).all()
        task = session.get(Task, made.task.id)
    assert any("[REDACTED:gitlab-pat]" in str(row.detail) for row in audit)
    assert task is not None and task.title == "rotate [REDACTED:npm-access-token]"
