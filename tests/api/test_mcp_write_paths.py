"""`memory_write` and `memory_read` agree about a path (issue 47): a path with nothing the
caller may read is "no memory file … that you may read" to both (a note private to another
person reads as none at all, and writing there says so, with the path taken, never by whom);
a path with no file is written; a note the caller reads but does not own is "not your note".
Through the real MCP server, as tests/api/test_mcp.py."""

from __future__ import annotations

import httpx

from hub.app import Hub
from tests.api.test_mcp import (  # noqa: F401 (served: the fixture)
    ADMIN,
    refusal,
    served,
    session,
    text_of,
    told_a_secret,
)

BOBS = "knowledge/bob-deploy.md"
NOTE = "# Bob's deploy steps\nRun the tests, tag, push to quartz."


async def test_read_and_write_say_the_same_of_a_path(
    served: tuple[Hub, httpx.AsyncClient],  # noqa: F811
) -> None:
    hub, http = served
    alice, bob = await told_a_secret(hub, http)
    async with session(http, bob) as client:
        assert "1 memory item" in await text_of(
            client, "memory_write", path=BOBS, content=NOTE, anima="aria"
        )
    async with session(http, ADMIN) as client:
        shared = "---\nscope: shared\n---\n# Release rules\nNo deploys on Fridays."
        await text_of(
            client, "memory_write", path="knowledge/rules.md", content=shared, anima="aria"
        )
    async with session(http, alice) as client:
        unseen = f"no memory file {BOBS!r} that you may read"
        assert unseen in await refusal(client, "memory_read", path=BOBS, anima="aria")
        taken = await refusal(client, "memory_write", path=BOBS, content="mine", anima="aria")
        assert unseen in taken and "the path is taken" in taken
        assert "not your note" not in taken and "quartz" not in taken
        # A path where nothing is: read says so in the same words, and write makes it hers.
        fresh = "knowledge/alice-notes.md"
        assert f"no memory file {fresh!r} that you may read" in await refusal(
            client, "memory_read", path=fresh, anima="aria"
        )
        wrote = await text_of(
            client, "memory_write", path=fresh, content="Lunch at 12.", anima="aria"
        )
        assert "1 memory item" in wrote
        assert "Lunch at 12." in await text_of(client, "memory_read", path=fresh, anima="aria")
        # Her own note she writes again; a shared one she reads but does not change.
        await text_of(client, "memory_write", path=fresh, content="Lunch at 1.", anima="aria")
        assert "Fridays" in await text_of(
            client, "memory_read", path="knowledge/rules.md", anima="aria"
        )
        theirs = await refusal(
            client, "memory_write", path="knowledge/rules.md", content="x", anima="aria"
        )
        assert "is not your note (you may read it, not change it)" in theirs
    assert hub.memory is not None
    assert "quartz" in hub.memory.read("aria", BOBS)  # Bob's note is as he wrote it
    assert "Fridays" in hub.memory.read("aria", "knowledge/rules.md")


async def test_a_note_written_under_an_id_since_merged_in_is_still_yours(
    served: tuple[Hub, httpx.AsyncClient],  # noqa: F811
) -> None:
    hub, http = served
    alice, bob = await told_a_secret(hub, http)
    async with session(http, bob) as client:
        await text_of(client, "memory_write", path=BOBS, content=NOTE, anima="aria")
    # Bob's account was Alice's all along: an admin merges it into her.
    old_id, her_id = hub.identity.named("bob").id, hub.identity.named("alice").id
    hub.linking.merge(old_id, her_id, "admin", via="test")
    async with session(http, alice) as client:
        assert "quartz" in await text_of(client, "memory_read", path=BOBS, anima="aria")
        wrote = await text_of(
            client, "memory_write", path=BOBS, content="Push to granite now.", anima="aria"
        )
        assert "1 memory item" in wrote
    assert hub.memory is not None
    assert f"scope: person:{her_id}" in hub.memory.read("aria", BOBS)
