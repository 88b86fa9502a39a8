"""Telegram's inbound side over updates shaped like the Bot API's, and mutated: read by
python-telegram-bot (Update.de_json, what the adapter's parse_update does) and normalized by
adapters/telegram/normalize.py into an Inbound the hub can store, or nothing; and the real
hub's webhook (webhook.py) answers 200 or 400, never a server error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st
from telegram import Bot, Update

from adapters.telegram.normalize import Me, to_inbound
from adapters.telegram.webhook import NOT_AN_UPDATE, SECRET_HEADER
from animahub_kit.contract.telegram_harness import BOT_ID, BOT_NAME, SECRET, TOKEN, open_harness
from tests.fuzz.inbound import assert_inbound
from tests.fuzz.strategies import JSON, examples, junk, nasty_text, shaped, text

ME = Me(BOT_ID, BOT_NAME)
user_id = st.one_of(st.sampled_from([BOT_ID, 1001, 1002]), st.integers(-(2**63), 2**63))
person = shaped(
    {"id": user_id, "is_bot": st.booleans(), "first_name": nasty_text(20)},
    username=st.one_of(st.just(BOT_NAME), nasty_text(20)),
    last_name=nasty_text(10),
)
chat = shaped(
    {
        "id": st.integers(-(10**13), 10**13),
        "type": st.sampled_from(["private", "group", "supergroup", "channel"]),
    },
    title=nasty_text(20),
    is_forum=st.booleans(),
)
entity = shaped(
    {
        "type": st.sampled_from(["mention", "text_mention", "bot_command", "bold", "url"]),
        "offset": st.integers(-3, 60),
        "length": st.integers(-3, 60),
    },
    user=person,
)
bot_text = st.one_of(
    st.lists(
        st.one_of(
            nasty_text(10),
            st.sampled_from(
                [
                    f"@{BOT_NAME}",
                    "/anima",
                    "/start",
                    f"/anima@{BOT_NAME}",
                    "/start@otherbot",
                    "🦊",
                    "👩‍👩‍👧",
                ]
            ),
        ),
        max_size=8,
    ).map(" ".join),
    text(),
)
photo = shaped(
    {
        "file_id": nasty_text(20),
        "file_unique_id": nasty_text(10),
        "width": st.integers(),
        "height": st.integers(),
    },
    file_size=st.integers(),
)
document = shaped(
    {"file_id": nasty_text(20), "file_unique_id": nasty_text(10)},
    file_name=nasty_text(20),
    mime_type=nasty_text(10),
    file_size=st.integers(),
)
_message_fields: dict[str, st.SearchStrategy[Any]] = dict(
    text=bot_text,
    caption=bot_text,
    entities=st.lists(entity, max_size=4),
    caption_entities=st.lists(entity, max_size=2),
    message_thread_id=st.integers(-5, 2**31),
    is_topic_message=st.booleans(),
    edit_date=st.integers(-(2**40), 2**40),
    photo=st.lists(photo, max_size=2),
    document=document,
    sender_chat=chat,
)
replied = shaped(
    {"message_id": st.integers(1, 2**31), "chat": chat, "date": st.integers(0, 2**31)},
    **{"from": person},
    forum_topic_created=shaped(name=nasty_text(10), icon_color=st.integers()),
)
message = shaped(
    {"message_id": st.integers(-5, 2**31), "chat": chat, "date": st.integers(-(2**40), 2**40)},
    **{"from": person},
    reply_to_message=replied,
    **_message_fields,
)
_sender = st.fixed_dictionaries(
    {
        "id": st.sampled_from([BOT_ID, 1001, 1002]),
        "is_bot": st.booleans(),
        "first_name": nasty_text(20),
    },
    optional={"username": st.one_of(st.just(BOT_NAME), nasty_text(20))},
)
_chat = st.one_of(
    st.fixed_dictionaries(
        {"id": st.integers(1, 10**10), "type": st.just("private"), "first_name": nasty_text(10)}
    ),
    st.fixed_dictionaries(
        {"id": st.integers(-(10**13), -1), "type": st.just("supergroup"), "title": nasty_text(20)},
        optional={"is_forum": st.booleans()},
    ),
)
_entity = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["mention", "text_mention", "bot_command", "bold"]),
        "offset": st.integers(0, 40),
        "length": st.integers(1, 40),
    },
    optional={"user": _sender},
)
realistic = st.fixed_dictionaries(
    {
        "message_id": st.integers(1, 2**31),
        "from": _sender,
        "chat": _chat,
        "date": st.integers(0, 2**31),
        "text": bot_text,
    },
    optional={
        "entities": st.lists(_entity, max_size=4),
        "message_thread_id": st.integers(1, 2**31),
        "is_topic_message": st.booleans(),
        "edit_date": st.integers(0, 2**31),
        "reply_to_message": st.fixed_dictionaries(
            {
                "message_id": st.integers(1, 2**31),
                "from": _sender,
                "chat": _chat,
                "date": st.integers(0, 2**31),
            }
        ),
    },
)
update = st.builds(
    lambda update_id, kind, payload: {"update_id": update_id, kind: payload},
    st.integers(0, 2**31),
    st.sampled_from(["message", "edited_message", "message", "edited_message", "channel_post"]),
    st.one_of(realistic, realistic, message, junk),
)
BOT = Bot(TOKEN)


def _anima_of(chat_id: int, message_id: int) -> str | None:
    return "aria" if message_id % 2 else None  # our message ids: which Anima wrote them


def _read(data: JSON) -> Update | None:
    """What TelegramAdapter.parse_update makes of a webhook body's JSON (the SDK's parser)."""
    try:
        return Update.de_json(data, BOT)
    except NOT_AN_UPDATE:
        return None  # the SDK's reading of a shape that is not the Bot API's: webhook.py 400s


_MESSAGE = {"message_id": 1, "chat": {"id": 1, "type": "private"}, "date": 0, "text": "hi"}


@examples(ci=80, full=10_000)
@given(data=update)
# An entity splitting a surrogate pair: UnicodeDecodeError.
@example(
    data={
        "update_id": 1,
        "message": {
            **_MESSAGE,
            "text": "🦊x",
            "entities": [{"type": "mention", "offset": 1, "length": 2}],
        },
    }
)
# The SDK keeps whatever a body holds; to_inbound raised on each (TypeError, AttributeError).
@example(data={"update_id": 0, "message": {**_MESSAGE, "chat": {"id": 0, "type": []}}})
@example(data={"update_id": 0, "message": {**_MESSAGE, "text": [None]}})
@example(data={"update_id": 0, "message": {**_MESSAGE, "chat": None}})
@example(
    data={
        "update_id": 0,
        "message": {**_MESSAGE, "entities": [{"type": "mention", "offset": "x", "length": 1}]},
    }
)
def test_any_update_is_an_inbound_or_nothing(data: JSON) -> None:
    parsed = _read(data)
    event_kind("parsed" if parsed else "not an update")
    if parsed is None:
        return
    inbound = to_inbound(parsed, ME, _anima_of)
    event_kind("kept" if inbound else "dropped")
    if inbound is not None:
        assert_inbound(inbound, "telegram")


# --- the webhook of a running hub ------------------------------------------------------


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    async with open_harness(tmp_path) as harness, httpx.AsyncClient(timeout=30) as client:
        yield client, harness.fake.webhook_target


@examples(ci=20, full=2_000, fixture=True)
@given(body=st.one_of(update.map(json.dumps), junk.map(json.dumps), nasty_text(40)))
# The SDK raised reading each (OverflowError, OSError, AttributeError): a 500, and Telegram
# would have delivered the update again and again.
@example(body='{"update_id": 1, "message": {"message_id": 1, "chat": null, "date": 9e18}}')
@example(body='{"update_id": 1, "message": {"message_id": 1, "chat": null, "date": 2e16}}')
@example(
    body='{"update_id": 1, "message": {"message_id": 1, "chat": {"id": 1, "type": []}, '
    '"date": 0, "text": "x"}}'
)
async def test_the_webhook_answers_any_body_never_a_server_error(
    webhook: tuple[httpx.AsyncClient, str], body: str
) -> None:
    client, url = webhook
    response = await client.post(url, content=body.encode(), headers={SECRET_HEADER: SECRET})
    event_kind(f"status {response.status_code}")
    assert response.status_code in (200, 400), f"{response.status_code}: {response.text[:200]}"
