"""LINE's inbound side over webhook bodies shaped like LINE's, and mutated: parsed by
line-bot-sdk's WebhookParser (signature checked) and normalized by adapters/line/normalize.py
into an Inbound the hub can store, or nothing; and a running hub's webhook answers 200 or 400,
never a server error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st
from linebot.v3.webhook import WebhookParser
from linebot.v3.webhooks import MessageEvent

from adapters.line.normalize import to_inbound
from animahub_kit.contract.line_harness import BOT_USER, CHANNEL_SECRET, open_harness
from animahub_kit.fakes.line_server import FakeLine, sign
from tests.fuzz.inbound import assert_inbound
from tests.fuzz.strategies import JSON, examples, junk, nasty_text, shaped, text

PARSER = WebhookParser(CHANNEL_SECRET)
# What LineAdapter._webhook answers 400 for: the SDK could not read the body.
NOT_LINE = (UnicodeDecodeError, ValueError, KeyError, TypeError)

line_id = st.one_of(
    st.sampled_from([BOT_USER, "U" + "a" * 32, "C" + "c" * 32, "R" + "f" * 32]), nasty_text(12)
)
mentionee = shaped(
    {
        "type": st.sampled_from(["user", "all"]),
        "index": st.integers(-2, 60),
        "length": st.integers(-2, 60),
    },
    userId=line_id,
    isSelf=st.booleans(),
)
line_text = st.one_of(
    st.lists(
        st.one_of(nasty_text(10), st.sampled_from(["@Anima", "/anima", "/whoami", "🦊"])),
        max_size=8,
    ).map(" ".join),
    text(),
)
message = st.one_of(
    shaped(
        {"type": st.just("text"), "id": nasty_text(10), "text": line_text},
        quoteToken=nasty_text(10),
        mention=shaped(mentionees=st.lists(mentionee, max_size=3)),
    ),
    shaped(
        {"type": st.sampled_from(["image", "video", "audio"]), "id": nasty_text(10)},
        contentProvider=shaped(type=st.just("line")),
        duration=st.integers(),
    ),
    shaped(
        {
            "type": st.just("file"),
            "id": nasty_text(10),
            "fileName": nasty_text(20),
            "fileSize": st.integers(-1, 2**40),
        }
    ),
    shaped({"type": st.sampled_from(["sticker", "location"]), "id": nasty_text(10)}),
)
source = st.one_of(
    shaped({"type": st.just("user")}, userId=line_id),
    shaped({"type": st.just("group"), "groupId": line_id}, userId=line_id),
    shaped({"type": st.just("room"), "roomId": line_id}, userId=line_id),
)
event = shaped(
    {
        "type": st.sampled_from(["message", "message", "follow", "unsend"]),
        "mode": st.just("active"),
        "timestamp": st.integers(-(2**45), 2**45),
        "webhookEventId": nasty_text(26),
        "deliveryContext": shaped(isRedelivery=st.booleans()),
    },
    message=message,
    source=source,
    replyToken=nasty_text(32),
)
_user = st.sampled_from(["U" + "a" * 32, "U" + "d" * 32])


@st.composite
def realistic(draw: st.DrawFn) -> JSON:
    """A text or media message as LINE sends it (animahub_kit/fakes/line/events.py)."""
    text_message: JSON = {
        "type": "text",
        "id": str(draw(st.integers(1, 2**60))),
        "quoteToken": "q",
        "text": draw(line_text),
    }
    if draw(st.booleans()):
        text_message["mention"] = {
            "mentionees": draw(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "index": st.integers(0, 40),
                            "length": st.integers(1, 40),
                            "type": st.just("user"),
                            "userId": st.sampled_from([BOT_USER, "U" + "a" * 32]),
                            "isSelf": st.booleans(),
                        }
                    ),
                    max_size=3,
                )
            )
        }
    media: JSON = {
        "type": draw(st.sampled_from(["image", "video", "audio"])),
        "id": str(draw(st.integers(1, 2**60))),
        "contentProvider": {"type": "line"},
    }
    group = draw(st.sampled_from([None, "C" + "c" * 32, "R" + "f" * 32]))
    user = draw(_user)
    return {
        "type": "message",
        "message": draw(st.sampled_from([text_message, text_message, media])),
        "webhookEventId": draw(
            st.text("0123456789ABCDEFGHJKMNPQRSTVWXYZ", min_size=26, max_size=26)
        ),
        "deliveryContext": {"isRedelivery": draw(st.booleans())},
        "timestamp": draw(st.one_of(st.integers(0, 2**42), st.integers(-(2**63), 2**63))),
        "source": (
            {"type": "user", "userId": user}
            if group is None
            else {
                "type": "group" if group[0] == "C" else "room",
                f"{'group' if group[0] == 'C' else 'room'}Id": group,
                "userId": user,
            }
        ),
        "replyToken": "r" * 32,
        "mode": "active",
    }


body = st.builds(
    lambda destination, events: json.dumps({"destination": destination, "events": events}),
    st.one_of(st.just(BOT_USER), st.just(BOT_USER), junk),
    # One event the SDK refuses makes it refuse the whole body: mixed lists would hide the rest.
    st.one_of(
        st.lists(realistic(), min_size=1, max_size=3),
        st.lists(realistic(), min_size=1, max_size=3),
        st.lists(event, max_size=3),
        junk,
    ),
)


def _inbounds(raw: str) -> list[Any]:
    """What the adapter makes of one webhook body: its parser, then to_inbound per message."""
    try:
        payload = PARSER.parse(raw, sign(CHANNEL_SECRET, raw.encode()), as_payload=True)
    except NOT_LINE:
        event_kind("not a LINE webhook")
        return []
    raws = {
        str(e.get("webhookEventId")): e
        for e in json.loads(raw).get("events") or []
        if isinstance(e, dict)
    }
    found = []
    for parsed in payload.events or ():
        if isinstance(parsed, MessageEvent):
            raw_event = raws.get(parsed.webhook_event_id, {})
            found.append(
                to_inbound(parsed, str(payload.destination or BOT_USER), "Name", raw_event)
            )
    event_kind(f"{sum(1 for i in found if i)} kept")
    return found


def _body(**changes: Any) -> str:
    event = {
        "type": "message",
        "message": {"type": "text", "id": "1", "text": "hi", "quoteToken": "q"},
        "webhookEventId": "01" * 13,
        "deliveryContext": {"isRedelivery": False},
        "timestamp": 0,
        "source": {"type": "user", "userId": "U" + "a" * 32},
        "replyToken": "r",
        "mode": "active",
    }
    return json.dumps({"destination": BOT_USER, "events": [event], **changes})


@examples(ci=80, full=10_000)
@given(raw=body)
@example(raw=_body(destination="/"))  # the address 'line://U…', which does not parse back
@example(raw=_body(events=[{**json.loads(_body())["events"][0], "timestamp": 2**50}]))  # ValueError
def test_any_webhook_body_gives_inbounds_or_nothing(raw: str) -> None:
    for inbound in _inbounds(raw):
        if inbound is not None:
            assert_inbound(inbound, "line")


@pytest.fixture
async def fake(tmp_path: Path) -> AsyncIterator[FakeLine]:
    async with open_harness(tmp_path) as harness:
        yield harness.fake


@examples(ci=20, full=2_000, fixture=True)
@given(raw=st.one_of(body, junk.map(json.dumps), nasty_text(40)))
@example(raw=_body(events=[{**json.loads(_body())["events"][0], "timestamp": 2**50}]))  # a 500
async def test_the_webhook_answers_any_signed_body_never_a_server_error(
    fake: FakeLine, raw: str
) -> None:
    delivery = await fake.post_webhook(raw.encode(), sign(CHANNEL_SECRET, raw.encode()))
    event_kind(f"status {delivery.status}")
    assert delivery.status in (200, 400), f"{delivery.status}: {delivery.body[:200]}"
