"""`/share`: a person shares what they said with the team (hub/people/sharing.py).

`/share` alone (or the whole message "share that with the team", hub/slash.py)
shares the sender's last message in this conversation; `/share TEXT` shares TEXT. Either is
the sender's own words, so only ever widens what they said, never anyone else's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hub.memory.excerpt import cut
from hub.messages import Command, Inbound
from hub.people.identity import PersonView
from hub.people.sharing import Shared, ShareRefused, Sharing

AnimaHere = Callable[[Inbound, PersonView], str | None]
"""The Anima a message sent here would reach (for `/share TEXT`), or None."""
_COMMAND_WORD = re.compile(r"\s*/\S+\s?")
_QUOTED = 200


class ShareCommands:
    def __init__(self, sharing: Sharing, anima_here: AnimaHere) -> None:
        self._sharing = sharing
        self._anima_here = anima_here

    def answer(self, command: Command, person: PersonView, inbound: Inbound) -> str:
        where = str(inbound.address)
        words = _words(command, inbound)
        try:
            if not words:
                done = self._sharing.said(person, inbound.address.channel_key, where, "/share")
            else:
                anima = self._anima_here(inbound, person)
                if anima is None:
                    return "No Anima answers here yet, so there is nobody to share it with."
                key = f"said:{inbound.sender.key}:{inbound.event_id}"
                done = self._sharing.share(person, anima, words, key, where, "/share")
        except ShareRefused as exc:
            return str(exc)
        return told(done)


def told(done: Shared) -> str:
    """What the person is told once their words are shared."""
    quoted = f"“{cut(' '.join(done.words.split()), _QUOTED)}”"
    if not done.new:
        return f"That was already shared with the team: {quoted}"
    return (
        f"Shared with the team: {quoted}. {done.anima} may now recall it for anyone it talks "
        "with, in DMs and channels. It stays yours: /forget-me erases it with the rest."
    )


def _words(command: Command, inbound: Inbound) -> str:
    """What `/share TEXT` shares, as typed (line breaks kept); "" for `/share` alone and the
    phrase, which share the last message."""
    if not command.args:
        return ""
    text = inbound.text
    if text.lstrip().startswith("/"):
        return _COMMAND_WORD.sub("", text, count=1).strip()
    return " ".join(command.args).strip()
