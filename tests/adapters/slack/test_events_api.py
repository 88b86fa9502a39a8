"""The Events API over real HTTP: Bolt's verification, Slack's retries, slash commands."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from sqlmodel import select

from animahub_kit.contract.cases import (
    answered_marker,
    inbox_count,
    replies_containing,
    reply_to,
    settled_row,
)
from animahub_kit.contract.harness import Sent, eventually
from animahub_kit.contract.slack_harness import open_harness
from hub.adapter import PlatformState
from hub.store.models import InboxItem


async def test_url_verification_answers_the_challenge_only_when_signed(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        body = json.dumps({"token": "x", "challenge": "chal-123", "type": "url_verification"})
        headers = {"Content-Type": "application/json"}
        status, text = await h.fake.post_signed(body, headers)
        assert status == 200
        assert json.loads(text) == {"challenge": "chal-123"}
        status, _ = await h.fake.post_signed(body, headers, secret="wrong")
        assert status == 401


async def test_a_retry_is_acknowledged_200_and_not_answered_twice(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        event = h.fake.message_event("U0ALICE", "C0GENERAL", "<@U0BOT> retry me")
        first = await h.fake.deliver(event)
        assert first.status == 200
        await reply_to(h, "echo: retry me")
        rows = inbox_count(h)
        for reason in ("http_timeout", "http_error"):
            retry = await h.fake.redeliver(first.event_id, reason)
            assert retry.status == 200
        await answered_marker(h)
        assert inbox_count(h) == rows + 1  # the marker only
        assert len(replies_containing(h, "echo: retry me")) == 1


async def test_a_redelivered_edit_is_kept_once(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        sent = await h.say("bob", "general", "first version")
        edit = h.fake.edit_event(h._originals[sent.event_id], "second version")
        delivered = await h.fake.deliver(edit)
        edited = Sent(f"C0GENERAL:{edit['ts']}", sent.message_id, sent.channel, sent.thread)
        row = await settled_row(h, edited)
        assert (row.edit_of, row.text) == (sent.message_id, "second version")
        rows = inbox_count(h)
        assert (await h.fake.redeliver(delivered.event_id)).status == 200
        await answered_marker(h)
        assert inbox_count(h) == rows + 1


async def test_a_slash_command_over_http_is_answered_in_the_response(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        status, text = await h.fake.command("U0CAROL", "D0CAROL", "/anima", "list")
        assert status == 200
        answer = json.loads(text)
        assert answer["response_type"] == "ephemeral" and answer["text"]
        with h.hub.db.session() as session:
            row = session.exec(select(InboxItem).where(InboxItem.text == "/anima list")).one()
        assert (row.sender_key, row.address_kind) == ("slack:U0CAROL", "dm")


async def test_a_slow_command_is_acknowledged_then_answered_via_response_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import adapters.slack.events

    # A shorter ack budget than the sender's name lookup takes (which has its own, longer,
    # budget): the command cannot be answered in time, as on a slow day at Slack.
    monkeypatch.setattr(adapters.slack.events, "ACK_BUDGET_S", 0.3)
    async with open_harness(tmp_path) as h:
        h.fake.slow("users.info", 0.8)
        status, text = await h.fake.command("U0BOB", "C0GENERAL", "/whoami", "")
        assert status == 200
        assert json.loads(text) == {"text": "Working on it…", "response_type": "ephemeral"}
        responses = await eventually(lambda: h.fake.responses)
        assert len(responses) == 1
        assert responses[0]["response_type"] == "ephemeral"
        assert responses[0]["text"] and responses[0]["text"] != "Working on it…"


async def test_a_forged_slash_command_is_rejected_and_not_stored(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        rows = inbox_count(h)
        payload = h.fake.command_payload("U0CAROL", "C0GENERAL", "/anima", "bind kai")
        status, _ = await h.fake.post_signed(
            urlencode(payload),
            {"Content-Type": "application/x-www-form-urlencoded"},
            secret="forged",
        )
        assert status == 401
        assert inbox_count(h) == rows


async def test_socket_mode_mounts_no_events_route(tmp_path: Path) -> None:
    async with open_harness(tmp_path, socket_mode=True) as h:
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{h.hub_url}/slack/events", content=b"{}")
        assert response.status_code in (404, 405)


async def test_an_event_while_the_bot_token_is_refused_says_why_it_is_not_taken(
    tmp_path: Path,
) -> None:
    # Slack sends to the Request URL whatever the token; Bolt could not authorize it.
    async with open_harness(tmp_path, bot_token="xoxb-not-the-bot-token") as h:
        await eventually(
            lambda: h.hub.platforms.status()["slack"].state is PlatformState.UNAUTHORIZED
        )
        event = h.fake.message_event("U0ALICE", "C0GENERAL", "<@U0BOT> anyone?")
        delivery = await h.fake.deliver(event)
        assert delivery.status == 503  # not acknowledged: Slack sends it again
        detail = json.loads(delivery.body)["detail"]
        assert detail.startswith("the Slack adapter is not running: Slack refused slack.bot_token")
        assert "hub is not running" not in detail
