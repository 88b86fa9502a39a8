"""hub/commands parsing: which texts are commands, the usage line a malformed or unknown
command gets, and the handler parsing a command that arrives as text only.
"""

from __future__ import annotations

import pytest

from hub.commands import USAGE, is_command_text, parse_command
from hub.messages import Command, Inbound
from tests.unit.commands_helpers import CHANNEL, ROOT, Parts, bindings, run

# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/anima list", Command("anima", ("list",))),
        ("/anima bind aria", Command("anima", ("bind", "aria"))),
        ("  /anima   status   kai  ", Command("anima", ("status", "kai"))),
        ("/whoami", Command("whoami")),
        ("/WhoAmI", Command("whoami")),
        ("/anima@AnimaHubBot pause aria", Command("anima", ("pause", "aria"))),
        ("/anima", Command("anima")),
    ],
)
def test_typed_commands_parse(text: str, expected: Command) -> None:
    assert parse_command(text) == expected
    assert is_command_text(text)


@pytest.mark.parametrize(
    "text",
    ["hello", "/etc/hosts is broken", "/", "/ anima list", "", "please /anima list", "/animals"],
)
def test_other_text_is_not_a_command(text: str) -> None:
    assert parse_command(text) is None
    assert not is_command_text(text)


async def test_a_command_given_as_text_only_is_parsed_by_the_handler(parts: Parts) -> None:
    inbound = Inbound("t-1", CHANNEL, ROOT, "/anima bind kai")  # no Command attached
    await parts.service.handle(inbound, parts.identity.resolve(ROOT))
    assert bindings(parts.db) == {"slack:T1/C1": "kai"}


# --- usage ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "first_line"),
    [
        ("/anima", "Unknown command."),
        ("/anima dance", "Unknown command /anima dance."),
        ("/anima status", "/anima status needs one Anima name."),
        ("/anima bind", "/anima bind needs one Anima name."),
        ("/anima pause aria kai", "/anima pause needs one Anima name."),
        ("/anima unbind aria", "/anima unbind takes no name."),
        ("/anima status nobody", "No Anima named 'nobody' (Animas: aria, kai, mika)."),
        ("/anima bind nobody", "No Anima named 'nobody' (Animas: aria, kai, mika)."),
    ],
)
async def test_bad_commands_get_a_usage_line(parts: Parts, text: str, first_line: str) -> None:
    reply = await run(parts, text)
    assert reply.splitlines() == [first_line, USAGE]
    assert all(c in USAGE for c in ("/anima list", "/anima unbind", "/whoami"))
    assert bindings(parts.db) == {}
    assert parts.calls.beats == []


async def test_a_mention_style_name_is_accepted(parts: Parts) -> None:
    await run(parts, "/anima bind @Aria")
    assert bindings(parts.db) == {"slack:T1/C1": "aria"}
