"""Slack's inbound normalizer (adapters/slack/normalize.py) over events and slash commands
shaped like Slack's, with fields missing, of the wrong type, huge or full of odd characters:
an Inbound the hub can store, or None; never an exception. What verify.py refuses (on both
the Events API and Socket Mode) never reaches the normalizer. Names are looked up with the
real Directory and Slack SDK, against the fake Slack."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st

from adapters.slack.directory import Directory
from adapters.slack.events import EVENTS_PATH, build_app, events_router
from adapters.slack.normalize import Bot, Bots, Normalizer, to_commonmark
from adapters.slack.outbound import web_client
from adapters.slack.verify import command_problem, event_problem
from animahub_kit.fakes.slack_server import FakeSlack, sign
from hub.messages import Address
from tests.fuzz.inbound import assert_inbound
from tests.fuzz.strategies import JSON, examples, junk, nasty_text, shaped, text

TOKEN = "xoxb-fuzz"
SECRET = "fuzz-signing-secret"
USERS = ["U0ALICE", "U0BOB", "U0BOT", "U0ARIA", "W0EXT", "U0GONE"]
CHANNELS = ["C0GENERAL", "D0ALICE", "G0PRIVATE", "C0UNKNOWN"]

# Mostly what Slack sends, so that most events get as far as an Inbound.
user_id = st.one_of(st.sampled_from(USERS), st.sampled_from(USERS), nasty_text(12))
channel = st.one_of(st.sampled_from(CHANNELS), st.sampled_from(CHANNELS), nasty_text(12))
_good_ts = st.integers(1_000_000_000, 2_000_000_000).map(lambda s: f"{s}.000100")
ts = st.one_of(
    _good_ts,
    _good_ts,
    _good_ts,
    st.sampled_from(["1e20", "nan", "-1", "", "0", "9" * 30, "1700000000.1.2", "1.5#x"]),
    nasty_text(12),
)
markup = st.one_of(
    nasty_text(20),
    user_id.map("<@{}>".format),
    st.tuples(user_id, nasty_text(8)).map(lambda p: f"<@{p[0]}|{p[1]}>"),
    st.sampled_from(
        [
            "<#C0GENERAL|general>",
            "<#C1>",
            "<!here>",
            "<!channel|@channel>",
            "<!subteam^S1|@team>",
            "<!date^1392734382^{date}|x>",
            "&amp;",
            "&lt;",
            "&gt;",
            "<https://a.test|label>",
            "<mailto:a@b.test|a@b.test>",
            "<>",
            "<|>",
            "<@>",
            "<@U0BOT>",
            "\x00",
            "<",
            ">",
            "&",
        ]
    ),
)
slack_text = st.one_of(st.lists(markup, max_size=12).map(" ".join), text())
file_object = shaped(
    id=nasty_text(10),
    name=nasty_text(20),
    title=nasty_text(20),
    mimetype=nasty_text(10),
    size=st.integers(-1, 2**40),
    url_private=nasty_text(30),
    permalink=nasty_text(30),
)
_message_fields: dict[str, st.SearchStrategy[Any]] = dict(
    type=st.sampled_from(["message", "app_mention"]),
    subtype=st.sampled_from(
        [
            None,
            "file_share",
            "thread_broadcast",
            "me_message",
            "bot_message",
            "channel_join",
            "message_deleted",
            "message_changed",
        ]
    ),
    user=user_id,
    bot_id=st.sampled_from(["B0BOT", "B0ARIA", "B0OTHER", ""]),
    username=nasty_text(10),
    bot_profile=shaped(name=nasty_text(10)),
    text=slack_text,
    thread_ts=ts,
    parent_user_id=user_id,
    files=st.lists(st.one_of(file_object, junk), max_size=3),
    team=nasty_text(8),
)
inner_message = shaped(ts=ts, **_message_fields)
# What a person's message looks like (animahub_kit/fakes/slack/state.py message_event), text aside.
realistic = st.fixed_dictionaries(
    {
        "type": st.just("message"),
        "user": st.sampled_from(["U0ALICE", "U0BOB", "W0EXT", "U0GONE"]),
        "text": slack_text,
        "ts": _good_ts,
        "channel": st.sampled_from(CHANNELS),
    },
    optional={
        "channel_type": st.sampled_from(["im", "mpim", "channel", "group"]),
        "thread_ts": _good_ts,
        "subtype": st.sampled_from(["file_share", "thread_broadcast", "me_message"]),
        "files": st.lists(file_object, max_size=2),
        "team": st.just("T0TEAM"),
    },
)
mutated = shaped(
    {"channel": channel, "ts": ts},
    channel_type=st.sampled_from(["im", "mpim", "channel", "group", "app_home"]),
    event_ts=ts,
    message=inner_message,
    previous_message=inner_message,
    **_message_fields,
)
message_event = st.one_of(realistic, realistic, mutated)
command_payload = shaped(
    command=st.sampled_from(["/anima", "/whoami", "/", ""]).flatmap(
        lambda c: st.one_of(st.just(c), nasty_text(10))
    ),
    text=st.one_of(st.sampled_from(["bind aria", "status", "  ", ""]), text()),
    user_id=user_id,
    user_name=nasty_text(10),
    channel_id=channel,
    channel_name=st.sampled_from(["directmessage", "mpdm-a--b-1", "general", "privategroup"]),
    team_id=st.one_of(st.just("T0TEAM"), nasty_text(8)),
    trigger_id=nasty_text(20),
    response_url=nasty_text(20),
    token=nasty_text(10),
).map(lambda form: {k: v if isinstance(v, str) else json.dumps(v) for k, v in form.items()})
# Over HTTP a slash command is a form: every value a string (what parse_qsl gives Bolt).


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as fake:
        yield fake


@pytest.fixture
def normalizer(fake: FakeSlack) -> Normalizer:
    fake.add_bot(TOKEN, "U0BOT", "B0BOT", "anima")
    fake.add_user("U0ALICE", "alice", display_name="Alice")
    fake.add_user("U0BOB", "bob", real_name="Bob")
    fake.add_channel("C0GENERAL", "general")
    fake.add_channel("D0ALICE", kind="im")
    fake.add_channel("G0PRIVATE", "private", kind="mpim")
    bots = Bots()
    bots.add(Bot("U0BOT", "B0BOT"))
    bots.add(Bot("U0ARIA", "B0ARIA", "aria"))
    return Normalizer(Directory(web_client(TOKEN, fake.api_url)), bots)


async def _not_ours(address: Address) -> bool:
    return False  # the hub's transcript knows no thread of ours (adapter._in_our_thread)


_EVENT = {"type": "message", "channel": "C0GENERAL", "ts": "1700000000.000100", "text": "hi"}


@examples(ci=60, full=5_000, fixture=True)
@given(event=message_event)
# Each of these raised in the normalizer (AttributeError, TypeError, OverflowError) or made an
# address that does not parse back; verify.py refuses all but bot_profile now, which the
# normalizer reads as a name only when it is an object.
@example(event={**_EVENT, "subtype": "message_changed", "message": {}, "previous_message": True})
@example(event={**_EVENT, "subtype": []})
@example(event={**_EVENT, "user": []})
@example(event={**_EVENT, "parent_user_id": [], "thread_ts": "1600000000.000100"})
@example(event={**_EVENT, "subtype": "bot_message", "bot_profile": True})
@example(event={**_EVENT, "files": 1})
@example(event={**_EVENT, "ts": "1e20"})
@example(event={**_EVENT, "channel": "C1#x"})
@example(event={**_EVENT, "thread_ts": "1#\n"})
async def test_any_message_event_is_an_inbound_or_nothing(
    normalizer: Normalizer, event: JSON
) -> None:
    if event_problem(event) is not None:
        event_kind("refused")  # before the normalizer, on both paths (verify.py)
        return
    inbound = await normalizer.message(event, "T0TEAM", _not_ours)
    event_kind("kept" if inbound else "dropped")
    if inbound is not None:
        assert_inbound(inbound, "slack")
        assert "\x00" not in inbound.text  # the marker of a removed bot mention


@examples(ci=40, full=5_000, fixture=True)
@given(payload=command_payload)
@example(payload={})  # was the address 'slack:/' (now refused by command_problem)
async def test_any_slash_command_is_an_inbound(normalizer: Normalizer, payload: JSON) -> None:
    if command_problem(payload) is not None:
        return  # refused with a 400 before it reaches the normalizer (verify.py)
    inbound = await normalizer.command(payload)
    assert_inbound(inbound, "slack")
    assert inbound.command is not None
    assert "token" not in inbound.raw and "response_url" not in inbound.raw


@examples(ci=100, full=20_000)
@given(text=slack_text)
def test_markup_becomes_commonmark(text: str) -> None:
    bots = Bots()
    bots.add(Bot("U0BOT", "B0BOT"))
    converted = to_commonmark(text, {"U0ALICE": "Alice"}, bots)
    assert "\x00" not in converted.text
    assert converted.text == converted.text.strip()


# --- the Events API endpoint (events.py): Bolt verifies, dispatches, acknowledges ----------

form_value = st.one_of(nasty_text(20), st.sampled_from(["/anima", "C0GENERAL", "T0TEAM"]))
request_body = st.one_of(
    st.builds(
        lambda event, extra: json.dumps(
            {
                "type": "event_callback",
                "team_id": "T0TEAM",
                "event_id": "Ev1",
                "event": event,
                **extra,
            }
        ),
        st.one_of(message_event, junk),
        st.dictionaries(st.sampled_from(["type", "team_id", "event_id", "challenge"]), junk),
    ),
    st.builds(lambda c: json.dumps({"type": "url_verification", "challenge": c}), junk),
    st.dictionaries(
        st.sampled_from(
            [
                "command",
                "text",
                "user_id",
                "channel_id",
                "team_id",
                "trigger_id",
                "response_url",
                "payload",
                "ssl_check",
            ]
        ),
        form_value,
    ).map(urlencode),
    junk.map(json.dumps),
    nasty_text(100),
)


@pytest.fixture
async def events_client(
    fake: FakeSlack, normalizer: Normalizer
) -> AsyncIterator[httpx.AsyncClient]:
    async def on_event(body: dict[str, Any]) -> None:  # what SlackAdapter._on_event does
        event = body.get("event")
        if isinstance(event, dict):
            inbound = await normalizer.message(event, str(body.get("team_id") or ""), _not_ours)
            if inbound is not None:
                assert_inbound(inbound, "slack")

    async def on_command(body: dict[str, Any]) -> str:
        inbound = await normalizer.command(body)
        return inbound.text

    app = build_app(web_client(TOKEN, fake.api_url), SECRET, on_event, on_command)
    api = FastAPI()
    api.include_router(events_router(app, SECRET, lambda: None))
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client


@examples(ci=30, full=3_000, fixture=True)
@given(body=request_body, form=st.booleans())
# Bolt raised on each (JSONDecodeError, AttributeError) before checking the signature: a 500.
@example(body=":", form=False)
@example(body="0", form=False)
@example(body="payload=x", form=True)
@example(body='{"authorizations": "x"}', form=False)
async def test_any_signed_request_is_answered_never_a_server_error(
    events_client: httpx.AsyncClient, body: str, form: bool
) -> None:
    kind = "application/x-www-form-urlencoded" if form else "application/json"
    headers = {"Content-Type": kind, **sign(SECRET, str(int(time.time())), body)}
    response = await events_client.post(EVENTS_PATH, content=body.encode(), headers=headers)
    event_kind(f"status {response.status_code}")
    assert response.status_code < 500, f"{response.status_code}: {response.text[:200]}"
