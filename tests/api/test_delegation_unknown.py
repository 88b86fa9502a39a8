"""A plain request naming no Anima at all ("have zed check the build", zed being no one)
is answered with the Animas there are and how to ask, not "Noted" (issue 47); words that
only look like one ("have a look", "have lunch at noon") are answered as ever."""

from __future__ import annotations

from hub.app import Hub
from tests.api.test_chat_api import chat, sse_events
from tests.api.test_delegation import offline  # noqa: F401 (the fixture)


async def said(hub: Hub, anima: str, message: str) -> str:
    from tests.api.test_people import web

    async with web(hub, owner=True) as client:
        response = await chat(client, anima, message=message)
    return "".join(e.get("text", "") for e in sse_events(response.text))


async def test_a_request_naming_no_anima_says_which_animas_there_are(
    offline: Hub,  # noqa: F811
) -> None:
    text = await said(offline, "mika", "have zed check the build")
    assert text.startswith(
        "I could not hand that on: no Anima named 'zed' (the Animas here: aria, kai, mika); "
        "mika's direct subordinates: aria, kai; ask as “have aria …”"
    ), text
    assert "Noted" not in text
    text = await said(offline, "mika", "mika, please ask Zed to fix the printer")
    assert text.startswith("I could not hand that on: no Anima named 'zed'"), text
    # An Anima that manages nobody says which Animas there are too.
    text = await said(offline, "aria", "have zed check the build")
    assert text.startswith(
        "I could not hand that on: no Anima named 'zed' (the Animas here: aria, kai, mika); "
        "aria has no subordinates"
    ), text
    assert offline.tasks.listing() == []


async def test_words_that_name_no_one_are_no_request(offline: Hub) -> None:  # noqa: F811
    for message in ("have a look at the build", "have lunch at noon", "ask zed about it"):
        text = await said(offline, "mika", message)
        assert "could not hand that on" not in text, (message, text)
