"""Red team, issue 41 class 12: an Anima's own files are not memory.

`identity.md` (who the Anima is and how it is told to work), `crons/*.md` (what it does on
a schedule and where it posts) and any other file of its folder that holds no memory
items are read by the owner and admins only (docs/memory.md "Browsing it"): a person asking
for one over REST is answered 403 and over MCP a refusal, whatever way the path is spelt,
and neither quotes the file. What a person may read there are memory items, by scope.
"""

from __future__ import annotations

import pytest

from hub.markdown_files import atomic_write
from tests.api.test_mcp import refusal, session, text_of
from tests.privacy.memory_world import ADMIN, Served, rest_read

CRON = (
    "## Payroll digest\nschedule: 0 9 * * 1\ntype: llm\npost_to: slack:T1/D0DANA\n"
    "Tell Dana the payroll code PAYROLL-ORCA-12 and her review date.\n"
)
IDENTITY_MARK = "IDENTITY-HERON-77"
# Each Anima file and a word only it holds; the owner wrote them.
FILES = {
    "identity.md": IDENTITY_MARK,
    "crons/payroll.md": "PAYROLL-ORCA-12",
    "notes/escalation.md": "ESCALATE-LYNX-3",  # a file of the folder that is no memory layer
}


def planted(served: Served) -> None:
    folder = served.folder
    identity = folder / "identity.md"
    atomic_write(identity, identity.read_text() + f"\nInternal: escalate with {IDENTITY_MARK}.\n")
    atomic_write(folder / "crons" / "payroll.md", CRON)
    atomic_write(folder / "notes" / "escalation.md", "---\n---\nESCALATE-LYNX-3\n")


@pytest.mark.parametrize("who", ["dana", "eve"])
async def test_a_person_reads_no_anima_file_over_rest(served: Served, who: str) -> None:
    planted(served)
    token = served.dana if who == "dana" else served.eve
    for path, word in FILES.items():
        answer = await rest_read(served, token, path)
        assert answer.status_code == 403, (path, answer.text)
        assert word not in answer.text and "owner and admins" in answer.json()["detail"]
        # The same file by a path that does not exist: refused the same way, so a person
        # cannot tell which of the Anima's files exist either.
        missing = await rest_read(served, token, path.replace(".md", "-nope.md"))
        assert missing.status_code == 403
    owner = await rest_read(served, ADMIN, "identity.md")
    assert owner.status_code == 200 and IDENTITY_MARK in owner.json()["content"]
    cron = await rest_read(served, ADMIN, "crons/payroll.md")
    assert "PAYROLL-ORCA-12" in cron.json()["content"]


async def test_a_person_reads_no_anima_file_over_mcp(served: Served) -> None:
    planted(served)
    async with session(served.http, served.eve) as client:
        for path, word in FILES.items():
            refused = await refusal(client, "memory_read", path=path, anima="aria")
            assert word not in refused and "owner and admins" in refused, refused
    async with session(served.http, ADMIN) as client:
        for path, word in FILES.items():
            assert word in await text_of(client, "memory_read", path=path, anima="aria")


async def test_what_a_person_reads_is_memory_items(served: Served) -> None:
    """The refusal is about the kind of file, not the read: a person's own note reads."""
    async with session(served.http, served.dana) as client:
        note = {"path": "knowledge/boat.md", "content": "My boat is blue.", "anima": "aria"}
        written = await text_of(client, "memory_write", **note)
        assert "1 memory item" in written
        assert "My boat is blue." in await text_of(
            client, "memory_read", path="knowledge/boat.md", anima="aria"
        )
    mine = await rest_read(served, served.dana, "knowledge/boat.md")
    assert mine.status_code == 200 and "My boat is blue." in mine.json()["content"]
