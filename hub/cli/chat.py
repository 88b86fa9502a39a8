"""`animahub chat`: one message to an Anima, its reply streamed as it comes."""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

import typer

from hub.cli.console import fail, given, settings_or_exit, show_reply
from hub.cli.hub_api import choose
from hub.cli.memory import known_anima
from hub.cli.runfile import HubBusy
from hub.messages import (
    CONVERSATION_ID_PATTERN,
    CONVERSATION_ID_RULE,
    PERSON_NAME_PATTERN,
    PERSON_NAME_RULE,
)

if TYPE_CHECKING:
    import httpx


def _conversation_id(value: str) -> str:
    """The hub's own rule, in words: its 422 quoted the regular expression."""
    if not re.fullmatch(CONVERSATION_ID_PATTERN, value):
        raise fail(
            f"--conversation {value!r} is not a conversation id: use {CONVERSATION_ID_RULE}", code=2
        )
    return value


def _person(value: str) -> str:
    """As `_conversation_id`: the hub's rule for a person's name, in words."""
    if value and not re.fullmatch(PERSON_NAME_PATTERN, value):
        raise fail(f"--user {value!r} is not a person's id or name: use {PERSON_NAME_RULE}", 2)
    return value


def chat(
    name: Annotated[str, typer.Argument(help="The Anima to talk to.", callback=given)],
    message: Annotated[str, typer.Argument(help="What to say.")],
    user: Annotated[
        str,
        typer.Option(help="Act for this person (owner or admin token only).", callback=_person),
    ] = "",
    conversation: Annotated[
        str, typer.Option(help="Conversation id; reuse it to continue.", callback=_conversation_id)
    ] = "cli",
    new: Annotated[bool, typer.Option("--new", help="--user is someone new: create them.")] = False,
) -> None:
    """Send one message to an Anima and print the reply as it streams."""
    from hub.cli.client import ChatFailed, hub_client, stream_chat

    settings = settings_or_exit()
    known_anima(settings, name)
    payload = {"message": message, "conversation_id": conversation}
    if user:  # otherwise the hub's owner (or the admin token's) speaks
        payload["user"] = user

    async def run() -> None:
        async with hub_client(settings, calls_the_model=True) as client:
            if user:
                payload["user"] = await _known_person(client, user, new)
            await show_reply(stream_chat(client, name, payload))

    try:
        asyncio.run(run())
    except ChatFailed as exc:
        raise fail(str(exc)) from None
    except HubBusy as exc:
        raise fail(str(exc)) from None


async def _known_person(client: httpx.AsyncClient, user: str, new: bool) -> str:
    """What the chat request's `user` is: the person --user means, by id (`person:ID`);
    asked which when it is a name several people or a platform account go by (a display
    name picks no one, docs/people.md). Refuses a --user the hub does not know: the chat
    API would start a new person, whose conversations and memory would be apart from the
    one meant ("Ravi" for "Ravi Kumar"); and a --new the hub knows."""
    found = await client.get(f"/api/people/{quote(user, safe='')}")
    candidates = found.json().get("candidates") if found.status_code == 409 else None
    if candidates and new:
        raise fail(
            f"{user!r} is a name the hub knows already "
            f"({', '.join(c['id'] for c in candidates)}); leave out --new to choose one"
        )
    if candidates:
        return f"person:{choose(user, candidates, can_new=False)}"
    if found.status_code == 404 and not new:
        raise fail(
            f"no person named {user!r}: check the spelling (`animahub people list`), "
            "or add --new to talk as someone new"
        )
    if found.status_code == 200 and new:
        known = found.json()
        raise fail(
            f"{user!r} is someone the hub knows already: {known['name']} ({known['id']}); "
            "leave out --new to talk as them"
        )
    if found.status_code == 200:
        return f"person:{found.json()['id']}"
    return user  # --new: someone new by that name
