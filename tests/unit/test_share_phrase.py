"""The phrase that shares (hub/slash.py): only the whole message "share that with
the team" (and its few forms) is `/share`; an ordinary message that holds it, asks it or
negates it never widens anyone's memory (issue 47)."""

from __future__ import annotations

import pytest

from hub.commands import parse_command
from hub.messages import Command


@pytest.mark.parametrize(
    "text",
    [
        "share that with the team",
        "Share this with the team.",
        "please share it with everyone",
        "  share that with everybody, please!  ",
        "/share",
    ],
)
def test_the_phrase_alone_is_share(text: str) -> None:
    assert parse_command(text) == Command("share", ())


@pytest.mark.parametrize(
    "text",
    [
        "don't share that with the team",
        "can you share that with the team?",
        "share that with the team and then deploy",
        "I told her to share that with the team",
        "share that with the team? no, keep it",
        "share the budget with the team",
        "share that",
        "with the team",
    ],
)
def test_an_ordinary_message_holding_the_phrase_is_no_command(text: str) -> None:
    assert parse_command(text) is None


def test_share_takes_what_follows_it() -> None:
    assert parse_command("/share We ship on Friday") == Command(
        "share", ("We", "ship", "on", "Friday")
    )
