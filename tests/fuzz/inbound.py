"""What every normalized Inbound must be, whatever the platform sent: what the hub can store
and act on (hub/inbound/ingress.py stores the address as a string and parses it back)."""

from __future__ import annotations

import json

from hub.messages import Address, Inbound


def assert_inbound(inbound: Inbound, platform: str) -> None:
    assert isinstance(inbound, Inbound)
    assert isinstance(inbound.event_id, str) and inbound.event_id
    address = inbound.address
    assert address.platform == platform
    assert all(isinstance(part, str) for part in (address.workspace, address.channel))
    assert Address.parse(str(address), address.kind) == address, f"{address!r} does not round-trip"
    sender = inbound.sender
    assert isinstance(sender.user_id, str) and isinstance(sender.display_name, str)
    assert isinstance(inbound.text, str)
    assert all(isinstance(name, str) for name in inbound.mentions)
    assert inbound.reply_to is None or isinstance(inbound.reply_to, str)
    assert inbound.edit_of is None or isinstance(inbound.edit_of, str)
    assert inbound.sent_at.tzinfo is not None
    for attachment in inbound.attachments:
        assert isinstance(attachment.name, str) and isinstance(attachment.url, str)
        assert attachment.size is None or isinstance(attachment.size, int)
    json.dumps(inbound.raw)  # the raw payload goes into a JSON column
