"""Bot commands: the menu registered with `setMyCommands`, and where answers go.

Commands are typed text on Telegram (`/anima list`, `/anima@botname list` in groups); the
normalizer parses them with the hub's parser and the hub's command handler answers in the
`Receipt`. The answer is private where Telegram allows it: in a private chat it is posted
there; in a group it goes to the sender's private chat with the bot, and only when Telegram
refuses that (the person never started the bot, or blocked it) is it posted in the group, as
a reply to the command in its topic. `/start`, which Telegram sends when someone opens the
bot, is answered with a welcome and `/whoami`.
"""

from __future__ import annotations

import logging

from adapters.telegram.normalize import START, to_message_id
from adapters.telegram.outbound import Outbound
from hub.adapter import PermanentDeliveryError
from hub.messages import Address, AddressKind, Inbound

log = logging.getLogger(__name__)
MENU = (
    ("anima", "Animas: list, status, bind, unbind, heartbeat, pause, resume"),
    ("whoami", "Who the hub knows you as"),
    ("web", "A sign-in link to the web chat (in a private chat)"),
    ("link", "Link your other accounts: a code, or /link CODE from the other one"),
    ("unlink", "Unlink a platform: /unlink slack"),
    ("forget_me", "Delete what the Animas keep private to you"),
    ("share", "Share your last message here (or /share TEXT) with the team"),
    (START, "Start talking to the Animas"),
)
WELCOME = "Welcome to AnimaHub. Write here to talk to the Animas."
RECEIVED = "Received."


def answer(inbound: Inbound, reply: str | None) -> str:
    text = reply or RECEIVED
    if inbound.text.split(maxsplit=1)[0].lower() == f"/{START}":
        return f"{WELCOME}\n\n{text}"
    return text


async def deliver(outbound: Outbound, inbound: Inbound, html: str) -> None:
    """Post a command's answer privately, or in the group when a DM is refused."""
    address = inbound.address
    if address.kind is not AddressKind.DM and not inbound.sender.is_bot:
        private = Address(
            address.platform, address.workspace, inbound.sender.user_id, None, AddressKind.DM
        )
        try:
            await outbound.post(private, html)
            return
        except PermanentDeliveryError as exc:  # never started the bot, or blocked it
            log.info("answering %s in the group: no private chat (%s)", inbound.event_id, exc)
    try:
        await outbound.post(address, html, reply_to=to_message_id(inbound.reply_to))
    except PermanentDeliveryError as exc:
        log.warning("could not answer command %s: %s", inbound.event_id, exc)
