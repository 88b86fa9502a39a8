"""The Discord adapter's pure text work: mention gaps, markdown, command options."""

from __future__ import annotations

import pytest

from adapters.discord.commands import command_of, command_text, reply_text
from adapters.discord.normalize import address_of_raw, tidy
from adapters.discord.render import render
from hub.messages import Address, AddressKind, Command

GAP = "\x00"  # where normalize removed the bot's own mention


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{GAP} kai, what is the build status?", "kai, what is the build status?"),
        (f"hey {GAP}, look at this", "hey, look at this"),
        (f"{GAP}: deploy now", "deploy now"),
        (f"thanks {GAP}", "thanks"),
        ("no mention here  ", "no mention here"),
        (f"{GAP}\n```\n  keep   spacing\n```", "```\n  keep   spacing\n```"),
    ],
)
def test_removed_mentions_leave_no_gaps(text: str, expected: str) -> None:
    assert tidy(text) == expected


def test_render_keeps_discord_markdown_and_adapts_what_it_lacks() -> None:
    markdown = "\n".join(
        [
            "# Title",
            "#### Detail",
            "Some **bold** and `code`, ![chart](https://x.test/c.png)",
            "",
            "| a | b |",
            "|---|---|",
            "| 1 | 2 |",
            "",
            "```",
            "#### not a heading in code",
            "| not | a table |",
            "|---|---|",
            "```",
        ]
    )
    assert render(markdown).split("\n") == [
        "# Title",
        "**Detail**",
        "Some **bold** and `code`, [chart](https://x.test/c.png)",
        "",
        "```",
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "```",
        "",
        "```",
        "#### not a heading in code",
        "| not | a table |",
        "|---|---|",
        "```",
    ]


def test_command_options_become_args() -> None:
    data = {
        "name": "anima",
        "options": [
            {"name": "bind", "type": 1, "options": [{"name": "name", "type": 3, "value": "aria"}]}
        ],
    }
    command = command_of(data)
    assert command == Command("anima", ("bind", "aria"))
    assert command_text(command) == "/anima bind aria"
    assert command_of({"name": "whoami"}) == Command("whoami")


def test_command_replies_fit_one_message() -> None:
    assert reply_text(None) == "Received."
    assert len(reply_text("x" * 5000)) == 2000


def test_raw_channels_are_addressed_like_gateway_ones() -> None:
    thread = {"id": "30", "type": 11, "parent_id": "20"}
    assert address_of_raw(thread, "10") == Address("discord", "10", "20", "30")
    dm = {"id": "40", "type": 1}
    assert address_of_raw(dm, None) == Address("discord", "@me", "40", None, AddressKind.DM)
    assert address_of_raw({"id": "20", "type": 0}, "10") == Address("discord", "10", "20")
