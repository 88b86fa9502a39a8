"""Issue 41, class 11: text nothing can encode, and updates the hub cannot handle.

A lone UTF-16 surrogate ("\\ud800" in JSON) answered 500 in the web chat and stalled
Telegram polling for everyone. Now the HTTP API refuses such a body (422) and text from a
platform has each surrogate replaced with U+FFFD (hub/messages.py `clean_text`). An update
that fails anyway (here: a database trigger refusing it, a fault at the database, not in
the hub's code) is kept as failed (audit `update.failed`), named in health, and the
platform keeps flowing: the polling offset moves past it, a webhook answers 200. The real
SDKs (python-telegram-bot, line-bot-sdk, slack-bolt) against animahub_kit/fakes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlmodel import select

from animahub_kit.contract import line_harness, slack_harness, telegram_harness
from animahub_kit.contract.cases import reply_to
from animahub_kit.contract.harness import eventually
from hub.api.routes import health
from hub.app import Hub
from hub.cli.status import _failed_line
from hub.store.models import AuditEntry, InboxItem

LONE = "\ud800"
REPLACED = "\ufffd"
POISON = "poison-pill"
ALICE = telegram_harness.PEOPLE["alice"]


def _poison(hub: Hub) -> None:
    """The database refuses any inbox row whose text holds POISON (a SQLite trigger)."""
    with hub.db.engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TRIGGER poison BEFORE INSERT ON inbox "
                f"WHEN NEW.text LIKE '%{POISON}%' "
                "BEGIN SELECT RAISE(ABORT, 'this update poisons the store'); END"
            )
        )


def _failed(hub: Hub) -> list[AuditEntry]:
    with hub.db.session() as session:
        return list(session.exec(select(AuditEntry).where(AuditEntry.action == "update.failed")))


def _texts(hub: Hub) -> list[str]:
    with hub.db.session() as session:
        return list(session.exec(select(InboxItem.text)))


# the web edge: refused with 422 -----------------------------------------------------------


async def test_a_lone_surrogate_in_a_json_body_is_refused_with_422(
    client: httpx.AsyncClient,
) -> None:
    json_type = {"Content-Type": "application/json"}
    lone = b'{"message": "hi \\ud800 there", "conversation_id": "s1", "user": "alice"}'
    chat = await client.post("/api/chat/mika", content=lone, headers=json_type)
    assert chat.status_code == 422, chat.text
    assert "surrogate" in chat.json()["detail"]
    low_first = b'{"text": "\\udc00\\ud800", "user": "alice"}'
    post = await client.post("/api/channels/general/posts", content=low_first, headers=json_type)
    assert post.status_code == 422, post.text
    mcp = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"x": "\\uDBFF"}}'
    refused = await client.post("/mcp", content=mcp, headers=json_type)
    assert refused.status_code == 422, refused.text
    # A pair escaped as two \u escapes is one character: accepted.
    pair = b'{"text": "smile \\ud83d\\ude00", "user": "alice"}'
    ok = await client.post("/api/channels/general/posts", content=pair, headers=json_type)
    assert ok.status_code == 202, ok.text
    posts = (await client.get("/api/channels/general/posts")).json()["posts"]
    assert [p["text"] for p in posts if p["author_kind"] == "person"] == ["smile \U0001f600"]


# Telegram: polling and webhook -------------------------------------------------------------


async def test_telegram_polling_cleans_a_lone_surrogate_and_keeps_flowing(
    tmp_path: Path,
) -> None:
    async with telegram_harness.open_harness(tmp_path, webhook=False) as h:
        await h.dm("alice", f"odd {LONE} text")
        await reply_to(h, f"echo: odd {REPLACED} text")
        await h.dm("bob", "after it")
        await reply_to(h, "echo: after it")
        assert f"odd {REPLACED} text" in _texts(h.hub)


async def test_telegram_polling_keeps_an_update_it_cannot_store_as_failed_and_moves_on(
    tmp_path: Path,
) -> None:
    async with telegram_harness.open_harness(tmp_path, webhook=False) as h:
        _poison(h.hub)
        poisoned = await h.dm("alice", f"a {POISON} with {LONE}")
        await h.dm("bob", "still there?")
        await reply_to(h, "echo: still there?")  # polling went past it
        [failed] = await eventually(lambda: _failed(h.hub) or None)
        assert failed.where == "telegram"
        assert failed.target == str(h.updates[poisoned.event_id])
        assert "poisons the store" in failed.detail["error"]
        assert failed.detail["update"]["message"]["text"] == f"a {POISON} with {REPLACED}"
        assert h.hub.port.load_cursor("telegram:offset") is not None
        assert int(h.hub.port.load_cursor("telegram:offset") or 0) > int(failed.target)
        _shown_in_health(h.hub)


async def test_telegram_polling_keeps_an_update_the_sdk_cannot_read_and_moves_on(
    tmp_path: Path,
) -> None:
    """python-telegram-bot reads a getUpdates batch as one: a date past the year 9999 made
    every poll raise, so nobody was answered again."""
    async with telegram_harness.open_harness(tmp_path, webhook=False) as h:
        await h.dm("alice", "before it")
        await reply_to(h, "echo: before it")
        unreadable = h.fake.message(ALICE, ALICE, "from the far future")
        unreadable["date"] = 2**63
        bad = await h.fake.push("message", unreadable)
        await h.dm("bob", "after it")
        await reply_to(h, "echo: after it")  # polling went past it
        [failed] = await eventually(lambda: _failed(h.hub) or None)
        assert failed.where == "telegram" and failed.target == str(bad["update_id"])
        assert int(h.hub.port.load_cursor("telegram:offset") or 0) > bad["update_id"]
        assert "from the far future" not in _texts(h.hub)
        _shown_in_health(h.hub, "date is not a number Telegram would send")


async def test_a_telegram_webhook_update_it_cannot_store_is_acknowledged_and_kept(
    tmp_path: Path,
) -> None:
    async with telegram_harness.open_harness(tmp_path, webhook=True) as h:
        _poison(h.hub)
        await h.dm("alice", f"odd {LONE} text")
        await reply_to(h, f"echo: odd {REPLACED} text")
        poisoned = await h.dm("alice", f"a {POISON}")
        update_id = h.updates[poisoned.event_id]
        assert (update_id, 200) in h.fake.deliveries  # Telegram will not send it again
        [failed] = _failed(h.hub)
        assert failed.target == str(update_id)
        _shown_in_health(h.hub)


# LINE: another platform, its webhook ------------------------------------------------------


async def test_line_cleans_a_lone_surrogate_and_keeps_an_event_it_cannot_store(
    tmp_path: Path,
) -> None:
    async with line_harness.open_harness(tmp_path) as h:
        await h.dm("alice", f"odd {LONE} text")  # the harness asserts the webhook's 200
        await reply_to(h, f"echo: odd {REPLACED} text")
        _poison(h.hub)
        poisoned = await h.dm("bob", f"a {POISON}")  # 200 too: LINE will not redeliver it
        [failed] = _failed(h.hub)
        assert failed.where == "line" and failed.target == poisoned.event_id
        await h.dm("carol", "after it")
        await reply_to(h, "echo: after it")
        _shown_in_health(h.hub)


async def test_slack_cleans_a_lone_surrogate_and_keeps_an_event_it_cannot_store(
    tmp_path: Path,
) -> None:
    async with slack_harness.open_harness(tmp_path) as h:
        await h.dm("alice", f"odd {LONE} text")  # the harness asserts the callback's 200
        await reply_to(h, f"echo: odd {REPLACED} text")
        _poison(h.hub)
        await h.dm("bob", f"a {POISON}")  # acknowledged: Slack will not retry it
        [failed] = _failed(h.hub)
        assert failed.where == "slack" and POISON in json.dumps(failed.detail["update"])
        await h.dm("carol", "after it")
        await reply_to(h, "echo: after it")
        _shown_in_health(h.hub)


def _shown_in_health(hub: Hub, why: str = "poisons the store") -> None:
    shown: dict[str, Any] = health(hub)
    assert "failed updates" in shown["problems"] and shown["status"] == "degraded"
    assert shown["failed_updates"]["count"] == 1
    assert why in _failed_line(shown["failed_updates"])
