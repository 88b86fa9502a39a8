"""Typed commands (`/anima bind aria`, `/whoami`) into a `Command`.

Slack slash commands and Discord application commands arrive already parsed (their adapters
build the `Command`); platforms where people type commands as text (the web chat, Telegram)
use `parse_command`. Only the hub's own command names are commands: any other text that
starts with a slash (`/etc/hosts is broken`) is an ordinary message.

One phrase is a command too, as a whole message only: "share that with the team" (or
"this", "it"; "everyone"; with "please"), which is `/share` (hub/commands/share.py). Only
the whole message counts, so no ordinary message ("don't share that with the team", "can
you share that with the team?", a sentence that quotes it) widens anyone's memory.
"""

from __future__ import annotations

import re

from hub.messages import Command

COMMAND_NAMES = frozenset(
    {"anima", "whoami", "web", "link", "unlink", "forget-me", "forget_me", "share"}
)
_SHARE_PHRASE = re.compile(
    r"(?:please,?\s+)?share\s+(?:that|this|it)\s+with\s+(?:the\s+team|everyone|everybody)"
    r"(?:,?\s+please)?\s*[.!]?",
    re.IGNORECASE,
)

USAGE = (
    "Usage: /anima list | /anima status NAME | /anima bind NAME | /anima unbind | "
    "/anima heartbeat NAME | /anima pause NAME | /anima resume NAME | /anima approve CODE | "
    "/anima tasks | /anima delegate NAME TASK | "
    "/whoami | "
    "/web (in a DM: a sign-in link to the web chat) | /link (in a DM: a code for your other "
    "account) | /link CODE | /unlink PLATFORM[:USER_ID] | /forget-me | "
    "/share (your last message here, with the team) | /share TEXT"
)


def parse_command(text: str) -> Command | None:
    """The command `text` spells, or None when it is not one of the hub's commands.

    `/anima@AnimaHubBot list` (Telegram's form in groups) is `/anima list`; arguments are
    split on whitespace and kept as typed.
    """
    stripped = text.strip()
    if _SHARE_PHRASE.fullmatch(stripped):
        return Command("share", ())
    if not stripped.startswith("/"):
        return None
    if not stripped[1:2].strip():
        return None  # "/" alone, or "/ something"
    words = stripped[1:].split()
    name = words[0].partition("@")[0].lower()
    if name not in COMMAND_NAMES:
        return None
    return Command(name, tuple(words[1:]))


def is_command_text(text: str) -> bool:
    return parse_command(text) is not None
