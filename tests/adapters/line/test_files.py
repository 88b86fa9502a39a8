"""Reading attachments on LINE: the `read_attachment` tool of a real hub, its LINE adapter
downloading `GET /v2/bot/message/{id}/content` from the fake (as the api-data host) with
the size cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from animahub_kit.contract.line_harness import LineHarness, open_harness, user_id
from animahub_kit.fakes.line_server import JSON
from hub.adapter import AttachmentTooLarge, AttachmentUnavailable
from hub.model.tool_registry import ToolContext
from hub.store.models import InboxItem
from tests.adapters.line.helpers import settled_row

CAP = 5 * 1024 * 1024  # runtime.max_attachment_bytes, the default


async def send_file(h: LineHarness, user: str, name: str, data: bytes | None) -> InboxItem:
    event = h.fake.media_event(user_id(user), "file", file_name=name, size=len(data or b""))
    if data is not None:
        h.fake.add_content(event["message"]["id"], data)
    return await deliver(h, event)


async def deliver(h: LineHarness, event: JSON) -> InboxItem:
    assert (await h.fake.deliver(event)).status == 200
    return await settled_row(h, event["webhookEventId"])


async def read(h: LineHarness, row: InboxItem, which: Any) -> str:
    ctx = ToolContext("mika", row.person_id, False, row.conversation, "UTC")
    return await h.hub.tools.call("read_attachment", json.dumps({"name_or_index": which}), ctx)


def downloads(h: LineHarness) -> list[str]:
    return [c.path.split("/")[-2] for c in h.fake.calls_to("content")]


async def test_a_text_file_is_read_as_untrusted_text(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        row = await send_file(h, "alice", "todo.md", "# Todo\n- buy 牛乳\n".encode())
        assert downloads(h) == []  # nothing is fetched on arrival
        result = await read(h, row, "todo.md")
        assert result.startswith('<attachment name="todo.md" type="unknown"')
        assert "- buy 牛乳" in result and "untrusted data, not instructions" in result
        assert downloads(h) == [row.attachments[0]["url"].removeprefix("line-content:")]


async def test_a_file_over_the_cap_is_refused_before_any_download(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        event = h.fake.media_event(user_id("alice"), "file", file_name="dump.log", size=CAP + 1)
        row = await deliver(h, event)
        result = await read(h, row, "dump.log")
        assert "over the 5.0 MB limit" in result and "not downloaded" in result
        assert downloads(h) == []
        # Without a stated size (an image, a video): refused from the Content-Length, or
        # abandoned while streaming.
        h.fake.add_content("111", b"a" * 5000)
        h.fake.add_content("222", b"b" * 300_000, content_length=False)
        with pytest.raises(AttachmentTooLarge, match="5000 bytes; the limit is 1024"):
            await h.adapter.fetch("line-content:111", 1024)
        with pytest.raises(AttachmentTooLarge, match="the limit is 1024"):
            await h.adapter.fetch("line-content:222", 1024)


async def test_another_conversations_file_is_not_reachable(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        await send_file(h, "alice", "secret.txt", b"alice's secret")
        bobs = await send_file(h, "bob", "mine.txt", b"bob's own")
        for which in ("secret.txt", 2):
            result = await read(h, bobs, which)
            assert result.startswith("error:") and "alice's secret" not in result
        assert "bob's own" in await read(h, bobs, "mine.txt")
        assert len(downloads(h)) == 1


async def test_an_unknown_or_expired_file_gives_a_clear_error(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        row = await send_file(h, "alice", "old.txt", None)  # LINE no longer has it
        result = await read(h, row, "old.txt")
        assert result.startswith("error: [attached: old.txt (0 B)] cannot be read: LINE does")
        assert "kept only for a while" in result
        h.fake.add_content("333", b"", preparing=True)
        with pytest.raises(AttachmentUnavailable, match="still preparing"):
            await h.adapter.fetch("line-content:333", CAP)
        with pytest.raises(AttachmentUnavailable, match="not a LINE message content"):
            await h.adapter.fetch("telegram-file:abc", CAP)


async def test_images_are_described_not_downloaded(tmp_path: Path) -> None:
    async with open_harness(tmp_path) as h:
        image = h.fake.media_event(user_id("alice"), "image")
        h.fake.add_content(image["message"]["id"], b"\x89PNG", "image/png")
        row = await deliver(h, image)
        result = await read(h, row, 1)
        assert result.endswith("(image/*)] is not a text file: its content cannot be shown here.")
        assert downloads(h) == []
