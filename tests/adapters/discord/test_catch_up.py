"""Discord catch-up: a new gateway session does not replay what it missed, so the adapter
reads each known channel's history after the last message it stored (adapters/discord/
catchup.py). Real hubs, real discord.py, the fake Discord kept running between them."""

from __future__ import annotations

from pathlib import Path

from adapters.discord.catchup import CURSOR
from animahub_kit.contract.discord_harness import DiscordHarness, open_harness
from animahub_kit.contract.harness import eventually, free_port
from animahub_kit.fakes.discord_server import FakeDiscord, FakeMessage


def replies(fake: FakeDiscord) -> dict[str, list[FakeMessage]]:
    """The bot's messages, by the message they reply to."""
    found: dict[str, list[FakeMessage]] = {}
    for message in fake.bot_messages():
        if message.reply_to is not None:
            found.setdefault(message.reply_to, []).append(message)
    return found


def answered(fake: FakeDiscord, message_ids: list[str]) -> bool:
    by_reference = replies(fake)
    return all(m in by_reference and "…" not in by_reference[m][0].content for m in message_ids)


async def say(h: DiscordHarness, user: str, channel: str, text: str) -> str:
    """A mention of the bot in a guild channel, stored on the fake (dispatched to whatever
    gateway session is open: none while the hub is down)."""
    person = h.fake.user(user)
    data = h.fake.message_payload(
        person, h.fake.channel_id(channel), f"{h.mention()} {text}", mentions=(h.fake.bot,)
    )
    await h.fake.send_message(data)
    return str(data["id"])


async def dm(h: DiscordHarness, user: str, text: str) -> str:
    person = h.fake.user(user)
    data = h.fake.message_payload(person, h.fake.dm_channel(person), text)
    await h.fake.send_message(data)
    return str(data["id"])


async def test_messages_sent_while_the_hub_was_down_are_answered_once_in_order(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(port=free_port())
    async with open_harness(tmp_path, fake=fake) as h:
        before = [await say(h, "alice", "general", "hello"), await dm(h, "bob", "hi there")]
        await eventually(lambda: answered(fake, before), timeout_s=20)
        assert h.hub.port.load_cursor(CURSOR)  # stored only once the messages were
    # The hub is down (the fake, stopped with it, keeps its history): people go on talking.
    missed = [await say(h, "alice", "general", f"while down {i}") for i in range(3)]
    missed.append(await dm(h, "bob", "did you see this?"))
    async with open_harness(tmp_path, fake=fake) as h:
        await eventually(lambda: answered(fake, missed), timeout_s=30)
        late = await say(h, "carol", "general", "after the restart")
        await eventually(lambda: answered(fake, [late]), timeout_s=20)
    by_reference = replies(fake)
    for message_id in [*before, *missed, late]:
        assert len(by_reference[message_id]) == 1, message_id  # answered once, not again
    general = fake.channel_id("general")
    in_general = [
        m.reply_to
        for m in sorted(fake.bot_messages(), key=lambda m: int(m.id))
        if m.channel_id == general
    ]
    assert in_general == [before[0], *missed[:3], late]  # in the order they were written
    assert by_reference[missed[0]][0].content == "echo: while down 0"


async def test_history_from_before_the_hub_first_joined_is_not_answered(
    tmp_path: Path,
) -> None:
    fake = FakeDiscord(port=free_port())
    await fake.start()
    mention = f"<@{fake.bot['id']}> old news"
    old = fake.message_payload(
        fake.user("dave"), fake.channel_id("random"), mention, mentions=(fake.bot,)
    )
    await fake.send_message(old)  # nobody is connected
    await fake.stop()
    async with open_harness(tmp_path, fake=fake) as h:
        fresh = await say(h, "dave", "random", "now")
        await eventually(lambda: answered(fake, [fresh]), timeout_s=20)
        assert old["id"] not in replies(fake)
        assert [m.reply_to for m in fake.bot_messages()] == [fresh]
