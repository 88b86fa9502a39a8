"""Red team, issue 41 class 1: copies of memory keep their privacy.

Dana and Eve each tell aria something in their own DM. Consolidation then copies it
around: a session summary, a knowledge note filed from it, the weekly stage's summary and
the day moved to `archive/episodes/`, the note moved to `archive/forgotten/` a month later.
Eve, with her own token, reads every copy over REST and MCP and gets her own words only;
a file that cannot be read item by item is the admins'. Dana forgets herself, and then the
bytes of the whole data folder (markdown, the Qdrant Edge shard and its write-ahead log,
SQLite and its, logs) hold nothing of what she said, while Eve's words stay. A forget the
audit log records that an earlier version did not apply to the archives is applied at the
next start. On SQLite and PostgreSQL (whose own files are the server's: docs/operations.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from hub.app import Hub
from hub.clock import ManualClock
from hub.markdown_files import write_document
from hub.memory.documents import Layer, MemoryItem, render_section
from hub.store.models import AuditEntry
from tests.api.test_forgetting import tell
from tests.api.test_mcp import refusal, session, text_of
from tests.conftest import add_demo_animas, make_settings
from tests.privacy.memory_world import (
    ADMIN,
    ARCHIVED,
    DANA,
    DANA_DM,
    DANA_SAYS,
    DANA_WORD,
    DAY,
    EVE,
    EVE_DM,
    EVE_SAYS,
    EVE_WORD,
    TOLD,
    Served,
    rest_read,
)


async def consolidated(served: Served) -> None:
    """Both tell aria their boat's name; every stage runs over it, in time."""
    hub, clock = served.hub, served.clock
    await tell(hub, DANA_DM, DANA, DANA_SAYS)
    await tell(hub, EVE_DM, EVE, EVE_SAYS)
    clock.advance(timedelta(minutes=30))
    await hub.on_tick()  # the idle sessions: summaries in the day's file, handoffs
    assert hub.consolidator is not None
    for stage, moment in (
        ("daily", TOLD + timedelta(days=1)),
        ("weekly", TOLD + timedelta(days=40)),  # the day is archived and summarised
        ("monthly", TOLD + timedelta(days=100)),  # the unused notes are forgotten
    ):
        clock.set(moment)
        await hub.consolidator.run("aria", stage, moment, "UTC")  # type: ignore[arg-type]
    assert hub.memory is not None
    await hub.memory.drain()


async def test_every_copy_is_read_with_the_scopes_its_items_had(served: Served) -> None:
    await consolidated(served)
    folder = served.folder
    archived = (folder / ARCHIVED).read_text()
    assert "Quasarwren" in archived and "Tidewhistle" in archived  # the day, moved unchanged
    forgotten = sorted((folder / "archive" / "forgotten").rglob("*.md"))
    assert any("Quasarwren" in p.read_text() for p in forgotten)  # the note filed from it
    copies = [
        ARCHIVED,
        f"episodes/{DAY}.md",  # now the weekly stage's summaries
        *(p.relative_to(folder).as_posix() for p in forgotten),
    ]
    for path in copies:
        seen = await rest_read(served, served.eve, path)
        assert seen.status_code in (200, 404), (path, seen.text)
        assert "quasarwren" not in seen.text.casefold(), path
        own = await rest_read(served, served.dana, path)
        assert own.status_code in (200, 404) and "tidewhistle" not in own.text.casefold()
    eve_sees = (await rest_read(served, served.eve, ARCHIVED)).json()["content"]
    assert "Tidewhistle" in eve_sees  # her own section of the archived day
    assert "Quasarwren" in (await rest_read(served, served.dana, ARCHIVED)).json()["content"]
    assert "Quasarwren" in (await rest_read(served, ADMIN, ARCHIVED)).json()["content"]
    async with session(served.http, served.eve) as client:
        for path in copies:
            result = await client.call_tool("memory_read", {"path": path, "anima": "aria"})
            shown = "".join(getattr(part, "text", "") for part in result.content)
            assert "quasarwren" not in shown.casefold(), path
        assert "Tidewhistle" in await text_of(client, "memory_read", path=ARCHIVED, anima="aria")


async def test_a_copy_that_cannot_be_read_item_by_item_is_the_admins(served: Served) -> None:
    """An archived day whose section metadata is broken, and a day copied with no
    metadata at all into a folder that is not memory: no scope can be given to any part."""
    folder = served.folder
    broken = folder / "archive" / "episodes" / "2026-09-01.md"
    write_document(
        broken, {"layer": "episodic"}, '## 09:00\n<!-- memory: {"scope": -->\nPIN KESTREL\n'
    )
    loose = folder / "exports" / "2026-09.md"
    write_document(loose, {}, "## 09:00\nDana: my PIN word is KESTREL\n")
    today = folder / "episodes" / f"{DAY}.md"  # a section written with no metadata at all
    write_document(today, {"layer": "episodic"}, "## 09:00\nDana: my PIN word is KESTREL\n")
    async with session(served.http, served.eve) as client:
        recent = await client.call_tool("memory_recent", {"anima": "aria"})
        assert "KESTREL" not in "".join(getattr(part, "text", "") for part in recent.content)
    # A note whose front matter YAML cannot parse: the parser's error would quote the line.
    bad_note = folder / "knowledge" / "vault.md"
    bad_note.parent.mkdir(parents=True, exist_ok=True)
    bad_note.write_text("---\ntitle: [PIN KESTREL\nscope: person:dana\n---\nKESTREL\n")
    unreadable = ("archive/episodes/2026-09-01.md", "exports/2026-09.md", "knowledge/vault.md")
    for path in (*unreadable, f"episodes/{DAY}.md"):
        seen = await rest_read(served, served.eve, path)
        assert seen.status_code == 403, seen.text
        assert "KESTREL" not in seen.text  # not even quoted in the reason
        assert "KESTREL" in (await rest_read(served, ADMIN, path)).json()["content"]
        async with session(served.http, served.eve) as client:
            refused = await refusal(client, "memory_read", path=path, anima="aria")
            assert "owner and admins" in refused and "KESTREL" not in refused


def data_files(home: Path) -> Iterator[Path]:
    return (p for p in sorted(home.rglob("*")) if p.is_file())


def holding(home: Path, word: bytes) -> list[str]:
    """The files under the data folder whose bytes hold `word` (any case)."""
    return [
        p.relative_to(home).as_posix() for p in data_files(home) if word in p.read_bytes().lower()
    ]


async def test_forgetting_leaves_no_byte_of_any_copy(served: Served, database_url: str) -> None:
    await consolidated(served)
    home = served.hub.settings.home
    before = holding(home, DANA_WORD)
    # the scan does see every kind of copy: markdown, index, the database
    assert f"animas/aria/{ARCHIVED}" in before
    assert any(p.startswith("index/shard/") for p in before)
    if database_url.startswith("sqlite"):
        assert {"hub.db", "hub.db-wal"} & set(before)
    # An index the hub once set aside as unreadable (and rebuilt from the markdown) holds
    # copies too.
    aside = home / "index.broken-20261101000000" / "shard"
    aside.mkdir(parents=True)
    (aside / "page_0.dat").write_bytes(b"\x00" + DANA_WORD + b"\x00")
    dana = served.hub.identity.resolve(DANA)
    forgotten = await served.hub.forget_person(dana, "test")
    assert sum(forgotten.memories.values()) >= 1
    assert holding(home, DANA_WORD) == []
    kept = holding(home, EVE_WORD)  # Eve's words stay, in markdown and index
    assert f"animas/aria/{ARCHIVED}" in kept and any(p.startswith("index/shard/") for p in kept)
    assert served.hub.memory is not None
    async with session(served.http, served.eve) as client:
        found = await text_of(client, "memory_search", query="Tidewhistle boat", anima="aria")
        assert "Tidewhistle" in found
    await served.hub.memory.stop()  # closed files, a last flush: still nothing
    assert holding(home, DANA_WORD) == []


async def test_a_forget_an_earlier_version_left_in_the_archive_is_applied_at_start(
    home: Path, database_url: str
) -> None:
    """What today's code left: a day archived with Dana's section in it, and the forget of
    Dana in the audit log, made after she said it. She spoke again after the forget: that
    stays, as does Eve's."""
    settings = make_settings(
        home, storage={"database_url": database_url}, hub={"default_anima": "aria"}
    )
    first = Hub(settings, clock=ManualClock(TOLD))
    await first.start()
    add_demo_animas(first)
    dana, eve = first.identity.resolve(DANA).id, first.identity.resolve(EVE).id
    with first.db.session() as session_:
        session_.add(
            AuditEntry(
                at=TOLD + timedelta(days=50),
                actor="owner",
                action="person.forgotten",
                target=dana,
                detail={"memories": 1, "facts": 0, "turns": 2, "handoffs": 0},
            )
        )
    await first.stop()
    sections = [
        _section("a", f"person:{dana}", TOLD, "Dana: Quasarwren"),
        _section("b", f"person:{eve}", TOLD, "Eve: Tidewhistle"),
        _section("c", f"person:{dana}", TOLD + timedelta(days=60), "Dana: Marlinspike"),
    ]
    archived = home / "animas" / "aria" / ARCHIVED
    write_document(archived, {"layer": "episodic", "date": DAY}, "\n".join(sections))
    again = Hub(settings, clock=ManualClock(TOLD + timedelta(days=70)))
    await again.start()
    try:
        text = archived.read_text()
        assert "Quasarwren" not in text and "Tidewhistle" in text and "Marlinspike" in text
    finally:
        await again.stop()
    # Applied once: the mark names the forget, and a start with nothing new applies nothing.
    mark = json.loads((home / "forgets-applied").read_text())
    write_document(archived, {"layer": "episodic", "date": DAY}, "\n".join(sections))
    third = Hub(settings, clock=ManualClock(TOLD + timedelta(days=71)))
    await third.start()
    await third.stop()
    assert "Quasarwren" in archived.read_text()
    # A database that does not hold the forget the mark names as it was (restored or
    # replaced, its ids may repeat): every forget it records is applied again.
    mark["at"] = (TOLD + timedelta(days=1)).isoformat()
    (home / "forgets-applied").write_text(json.dumps(mark))
    fourth = Hub(settings, clock=ManualClock(TOLD + timedelta(days=72)))
    await fourth.start()
    await fourth.stop()
    assert "Quasarwren" not in archived.read_text()


def _section(key: str, scope: str, at: datetime, text: str) -> str:
    person = scope.removeprefix("person:")
    item = MemoryItem(
        id=f"00000000-0000-0000-0000-00000000000{ord(key) - 96}",
        layer=Layer.EPISODIC,
        text=text,
        path=ARCHIVED,
        scope=scope,
        created=at,
        updated=at,
        person=person,
        section=f"{at:%H:%M}",
    )
    return render_section(item)
