"""A reply being written on Telegram is shown without posting anything: a draft in a private
chat (`sendMessageDraft`), "typing…" in a group; the reply itself is posted once, whole.
python-telegram-bot against the fake Bot API, with a real hub (tests/contract/)."""

from __future__ import annotations

from pathlib import Path

from animahub_kit.contract.harness import STREAM_PIECES, eventually
from animahub_kit.contract.telegram_harness import CHANNELS, PEOPLE, open_harness

FINAL = "".join(STREAM_PIECES)


async def test_a_reply_being_written_in_a_private_chat_is_a_draft_then_one_message(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        await h.dm("alice", "STREAM it")
        await eventually(lambda: [m for m in h.fake.messages if m.text == FINAL])
        alice = PEOPLE["alice"]
        drafts = [text for chat, _id, text in h.fake.drafts if chat == alice]
        assert drafts and all(text.endswith("…") for text in drafts)
        assert FINAL.startswith(drafts[0].removesuffix(" …"))  # the reply as it grew
        assert len({draft_id for chat, draft_id, _ in h.fake.drafts if chat == alice}) == 1
        assert [m.text for m in h.fake.messages] == [FINAL]  # no partial message, ever
        assert not [m for m in h.fake.messages if m.edits]


async def test_a_reply_being_written_in_a_group_shows_typing_and_posts_once(
    tmp_path: Path,
) -> None:
    async with open_harness(tmp_path) as h:
        await h.say("alice", "general", "STREAM it", mention=True)
        await eventually(lambda: [m for m in h.fake.messages if m.text == FINAL])
        general = CHANNELS["general"]
        assert (general, "typing") in h.fake.actions
        assert not h.fake.drafts  # a group takes no drafts
        assert [m.text for m in h.fake.messages] == [FINAL]
