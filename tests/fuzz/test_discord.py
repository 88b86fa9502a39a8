"""Discord's inbound side over payloads shaped like Discord's, and mutated: the HTTP
interactions endpoint (adapters/discord/interactions.py, with the real Ed25519 check and
commands.http_inbound) answers 200, 400 or 401, never a server error; a gateway message
(built by discord.py from a MESSAGE_CREATE) normalizes into an Inbound the hub can store."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import discord
import httpx
import pytest
from discord.http import HTTPClient
from discord.state import ConnectionState
from fastapi import FastAPI
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st
from nacl.signing import SigningKey

from adapters.discord.commands import http_inbound
from adapters.discord.interactions import PATH, InteractionsEndpoint
from adapters.discord.normalize import Identities, address_of_raw, tidy, to_inbound
from hub.messages import Address, AddressKind, Inbound
from tests.fuzz.inbound import assert_inbound
from tests.fuzz.strategies import JSON, examples, junk, nasty_text, shaped, snowflake, text

KEY = SigningKey(b"\x07" * 32)
BOT_ID = 10**17 + 1
ANIMA_BOT = 10**17 + 2

ids = st.one_of(snowflake(), snowflake(), st.sampled_from(["", "0", "-1", "1e5", "١٢٣", "12#3"]))
user = shaped(
    {"id": ids},
    username=nasty_text(20),
    global_name=st.one_of(st.none(), nasty_text(20)),
    discriminator=st.just("0"),
    avatar=st.none(),
    bot=st.booleans(),
)
channel_object = shaped(
    {"id": ids},
    type=st.sampled_from([0, 1, 3, 5, 10, 11, 12, 15, 99]),
    parent_id=ids,
    name=nasty_text(10),
)
option: st.SearchStrategy[Any] = st.recursive(
    shaped(name=nasty_text(10), type=st.sampled_from([1, 2, 3]), value=junk),
    lambda inner: shaped(
        name=nasty_text(10), type=st.sampled_from([1, 2]), options=st.lists(inner, max_size=3)
    ),
    max_leaves=4,
)
command_data = shaped(
    {"name": st.sampled_from(["anima", "whoami"])},
    id=ids,
    type=st.just(1),
    options=st.lists(option, max_size=3),
)
interaction = shaped(
    {"type": st.sampled_from([1, 2, 2, 2, 3, 4, 5])},
    id=ids,
    application_id=ids,
    token=nasty_text(20),
    data=command_data,
    channel_id=ids,
    channel=channel_object,
    guild_id=ids,
    member=shaped(user=user, nick=nasty_text(10)),
    user=user,
)


_person = st.fixed_dictionaries(
    {"id": snowflake(), "username": nasty_text(20), "discriminator": st.just("0")},
    optional={"global_name": st.one_of(st.none(), nasty_text(20)), "bot": st.booleans()},
)
_subcommand = st.fixed_dictionaries(
    {"name": st.sampled_from(["list", "status", "bind", "pause"]), "type": st.just(1)},
    optional={
        "options": st.lists(
            st.fixed_dictionaries(
                {"name": st.just("name"), "type": st.just(3), "value": nasty_text(30)}
            ),
            max_size=1,
        )
    },
)


@st.composite
def realistic_interaction(draw: st.DrawFn) -> JSON:
    """An application command as Discord sends it (animahub_kit/fakes/discord/objects.py)."""
    channel_id = draw(snowflake())
    kind = draw(st.sampled_from([0, 1, 11]))
    channel: JSON = {"id": channel_id, "type": kind}
    if kind == 11:
        channel["parent_id"] = draw(snowflake())
    data: JSON = {
        "id": draw(snowflake()),
        "application_id": draw(snowflake()),
        "type": 2,
        "token": draw(nasty_text(20)),
        "channel_id": channel_id,
        "channel": channel,
        "data": {
            "id": draw(snowflake()),
            "type": 1,
            **draw(
                st.one_of(
                    st.just({"name": "whoami"}),
                    st.builds(lambda o: {"name": "anima", "options": [o]}, _subcommand),
                )
            ),
        },
    }
    if kind == 1:
        data["user"] = draw(_person)
    else:
        data["guild_id"] = draw(snowflake())
        data["member"] = {"user": draw(_person), "roles": []}
    return data


async def _answer(inbound: Inbound) -> str:
    assert_inbound(inbound, "discord")  # what DiscordAdapter._answer_http hands the hub
    return "done"


async def _follow_up(payload: Mapping[str, Any], text: str) -> None:
    raise AssertionError("answered within the deferral time, never followed up")


@pytest.fixture
async def interactions() -> AsyncIterator[httpx.AsyncClient]:
    endpoint = InteractionsEndpoint(
        KEY.verify_key.encode().hex(), http_inbound, _answer, _follow_up, defer_after_s=30
    )
    api = FastAPI()
    api.include_router(endpoint.router())
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield client
    await endpoint.close()


def _signed(body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    signature = KEY.sign(stamp.encode() + body).signature.hex()
    return {"X-Signature-Ed25519": signature, "X-Signature-Timestamp": stamp}


@examples(ci=60, full=5_000, fixture=True)
@given(
    body=st.one_of(
        realistic_interaction().map(json.dumps),
        interaction.map(json.dumps),
        junk.map(json.dumps),
        nasty_text(50),
    )
)
# Each of these was a 500 (AttributeError in http_inbound), or an address not parsing back.
@example(body='{"type": 2, "id": "1", "data": {"name": "x"}, "channel_id": "1", "member": true}')
@example(body='{"type": 2, "id": "1", "data": {"name": "x"}, "channel": true, "user": {}}')
@example(
    body='{"type": 2, "id": "1", "data": {"name": "x", "options": [1]}, "channel_id": "1", '
    '"user": {"id": "1", "username": "a"}}'
)
@example(
    body='{"type": 2, "id": "1", "data": {"name": "x"}, "channel_id": "1#2", '
    '"user": {"id": "1", "username": "a"}}'
)
async def test_any_signed_interaction_is_answered_never_a_server_error(
    interactions: httpx.AsyncClient, body: str
) -> None:
    raw = body.encode()
    response = await interactions.post(PATH, content=raw, headers=_signed(raw))
    event_kind(f"status {response.status_code}")
    assert response.status_code in (200, 400), f"{response.status_code}: {response.text[:200]}"


@examples(ci=60, full=5_000)
@given(channel=st.one_of(channel_object, junk), guild=st.one_of(st.none(), ids))
@example(channel=None, guild=None)  # AttributeError
@example(channel={"id": "a/b#c"}, guild="1")  # an address that parses back as another
def test_a_raw_channel_is_an_address_or_a_parse_error(channel: Any, guild: str | None) -> None:
    try:
        address = address_of_raw(channel, guild)
    except (KeyError, TypeError, ValueError):
        return  # what InteractionsEndpoint answers 400 for
    assert Address.parse(str(address), address.kind) == address, f"{address!r}"


# --- gateway messages ------------------------------------------------------------------

_mention = st.one_of(
    ids.map("<@{}>".format),
    ids.map("<@!{}>".format),
    ids.map("<@&{}>".format),
    ids.map("<#{}>".format),
    st.sampled_from(
        [f"<@{BOT_ID}>", f"<@!{BOT_ID}>", f"<@{ANIMA_BOT}>", "\x00", "<@" + "1" * 5000 + ">"]
    ),
    nasty_text(20),
)
content = st.one_of(st.lists(_mention, max_size=10).map(" ".join), text())
_author = st.fixed_dictionaries(
    {
        "id": snowflake(),
        "username": nasty_text(20),
        "discriminator": st.just("0"),
        "avatar": st.none(),
    },
    optional={"global_name": nasty_text(20), "bot": st.booleans()},
)
_attachment = st.fixed_dictionaries(
    {
        "id": snowflake(),
        "filename": nasty_text(20),
        "size": st.integers(0, 2**40),
        "url": nasty_text(30),
        "proxy_url": nasty_text(30),
    },
    optional={"content_type": nasty_text(10)},
)
message_create = st.fixed_dictionaries(
    {
        "id": snowflake(),
        "channel_id": snowflake(),
        "author": _author,
        "content": content,
        "timestamp": st.just("2025-01-01T00:00:00+00:00"),
        "edited_timestamp": st.none(),
        "tts": st.booleans(),
        "mention_everyone": st.booleans(),
        "mentions": st.lists(_author, max_size=3),
        "mention_roles": st.lists(snowflake(), max_size=2),
        "attachments": st.lists(_attachment, max_size=2),
        "embeds": st.just([]),
        "pinned": st.just(False),
        "type": st.sampled_from([0, 19]),
    }
)
edit = st.one_of(
    st.none(), st.fixed_dictionaries({"edited_timestamp": nasty_text(30), "content": content})
)


@pytest.fixture
async def state() -> ConnectionState:
    """discord.py's connection state, as the gateway client builds Messages with it."""
    return ConnectionState(
        dispatch=lambda *args, **kwargs: None,
        handlers={},
        hooks={},
        http=HTTPClient(asyncio.get_running_loop()),
        intents=discord.Intents.default(),
    )


@examples(ci=60, full=5_000, fixture=True)
@given(data=message_create, edited=edit, dm=st.booleans())
@example(
    data={
        "id": "1",
        "channel_id": "2",
        "author": {"id": "3", "username": "a", "discriminator": "0", "avatar": None},
        "content": "<@" + "1" * 5000 + ">",
        "timestamp": "2025-01-01T00:00:00+00:00",
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": False,
        "type": 0,
    },
    edited=None,
    dm=True,
)
async def test_a_gateway_message_normalizes(
    state: ConnectionState, data: JSON, edited: JSON | None, dm: bool
) -> None:
    channel = discord.PartialMessageable(state=state, id=int(data["channel_id"]))
    message = discord.Message(state=state, channel=channel, data=data)  # type: ignore[arg-type]
    kind = AddressKind.DM if dm else AddressKind.CHANNEL
    address = Address("discord", "@me" if dm else "42", str(channel.id), None, kind)
    ids = Identities(bot_id=BOT_ID, anima_bots={ANIMA_BOT: "aria"})
    inbound = to_inbound(message, address, ids, addressed=True, edited=edited)
    assert_inbound(inbound, "discord")
    assert "\x00" not in inbound.text


@examples(ci=100, full=10_000)
@given(
    text=st.lists(
        st.one_of(nasty_text(10), st.just("\x00"), st.sampled_from([",", ".", ":", "!", "?"])),
        max_size=12,
    ).map("".join)
)
def test_tidy_closes_every_gap(text: str) -> None:
    tidied = tidy(text)
    assert "\x00" not in tidied and tidied == tidied.strip()
