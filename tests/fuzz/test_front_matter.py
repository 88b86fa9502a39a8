"""Memory files with front matter (hub/markdown_files.py, hub/memory/documents.py, notes.py,
files.py)
over any text: reading raises only the documented errors, what is written reads back the
same, and a write that fails leaves the old file as it was."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date
from pathlib import Path
from typing import Any

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from hub.markdown_files import atomic_write, read_document, write_document
from hub.memory.access import AccessLog
from hub.memory.documents import MemoryFileError, items_in, iter_items
from hub.memory.notes import load_notes, save
from hub.memory.paths import MemoryPathError, memory_path
from tests.fuzz.strategies import examples, junk, nasty_text

_KEYS = st.sampled_from(
    [
        "id",
        "layer",
        "title",
        "scope",
        "created",
        "updated",
        "last_access",
        "importance",
        "access_count",
        "links",
        "person",
        "channel",
        "status",
        "subject",
        "aliases",
        "sources",
        "superseded_by",
        "restored",
        "date",
    ]
)
_PROPER = st.one_of(
    st.sampled_from(["semantic", "procedural", "skill", "episodic", "shared", "superseded"]),
    st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat()),
    st.dates().map(date.isoformat),
    st.floats(0, 1),
    st.integers(0, 100),
    st.lists(nasty_text(10), max_size=3),
)
meta = st.dictionaries(st.one_of(_KEYS, nasty_text(10)), st.one_of(_PROPER, junk), max_size=8)
_LINES = st.one_of(
    nasty_text(30),
    st.sampled_from(
        [
            "---",
            "+++",
            ";;;",
            "{",
            "}",
            "## 09:30",
            "## 10:00 ",
            "# 2025-01-02",
            '<!-- memory: {"id": "x", "layer": "episodic"} -->',
            "<!-- memory: {} -->",
            '<!-- memory: {"created": "yesterday"} -->',
            "key: value",
            ": :",
            "- a",
            "[IMPORTANT]",
            "[[link]]",
            "\x00",
            "!!python/object:os.system",
        ]
    ),
)
file_text = st.lists(_LINES, max_size=20).map("\n".join)


def _yaml_text(data: dict[str, Any]) -> str:
    try:
        return "---\n" + yaml.safe_dump(data, allow_unicode=True) + "---\n"
    except yaml.YAMLError:
        return "---\n---\n"


written_file = st.one_of(file_text, st.builds(lambda m, b: _yaml_text(m) + b, meta, file_text))


@contextmanager
def anima_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


@examples(ci=60, full=10_000)
@given(text=written_file)
@example(text='{\n"a":\n}\nbody')  # was read as JSON front matter: JSONDecodeError
def test_reading_a_document_raises_only_a_yaml_error(text: str) -> None:
    with anima_folder() as folder:
        path = folder / "note.md"
        path.write_text(text, encoding="utf-8")
        try:
            meta_read, body = read_document(path)  # only YAML: a `{`/`+++` block is body
        except yaml.YAMLError:
            return
        assert isinstance(meta_read, dict) and isinstance(body, str)


@examples(ci=60, full=10_000)
@given(
    text=written_file,
    where=st.sampled_from(
        ["knowledge/n.md", "episodes/2025-01-02.md", "skills/s.md", "procedures/p.md"]
    ),
)
# Each of these raised a TypeError, OverflowError or JSONDecodeError, and stopped a rebuild.
@example(text="---\nlinks: 75\n---\nx", where="knowledge/n.md")
@example(text="---\nimportance: [1]\n---\nx", where="skills/s.md")
@example(text="---\naccess_count: .inf\n---\nx", where="knowledge/n.md")
@example(text="---\nstatus: {}\n---\nx", where="knowledge/n.md")
@example(text="## 09:30\n<!-- memory: {x} -->\nx", where="episodes/2025-01-02.md")
def test_memory_items_read_from_any_file_or_a_memory_file_error(text: str, where: str) -> None:
    with anima_folder() as folder:
        path = folder / where
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
        listed = iter_items(folder)  # what a rebuild reads: a bad file is skipped
        try:
            items = items_in(folder, path)
        except (yaml.YAMLError, MemoryFileError):
            assert listed == []
            return
        assert [i.id for i in listed] == [i.id for i in items]
        for item in items:
            item.meta()  # what a rewrite would write back


@examples(ci=40, full=5_000)
@given(texts=st.lists(written_file, min_size=1, max_size=4))
# Each of these raised a TypeError in consolidation's note properties.
@example(texts=["---\naliases: 1.5\nsources: 74\nstatus: [merged]\naccess_count: .inf\n---\nx"])
@example(texts=['{\n"a":\n}\nbody'])  # JSONDecodeError: not skipped like a YAML error
@example(texts=["---\n1: a\ncontent: b\nhandler: c\n---\nx\r\ny"])  # save: TypeError
def test_notes_load_from_any_files_and_save_idempotently(texts: list[str]) -> None:
    with anima_folder() as folder:
        (folder / "knowledge").mkdir()
        for number, text in enumerate(texts):
            (folder / "knowledge" / f"n{number}.md").write_text(text, encoding="utf-8")
        access = AccessLog(folder)
        for note in load_notes(folder):  # a file that cannot be read is skipped, not raised
            read = (note.id, note.layer, note.scope, note.active, note.subjects, note.sources)
            used = (note.importance, note.important, note.uses(access), note.last_touched(access))
            assert isinstance(read[0], str) and isinstance(used[0], float)
            save(folder, note)
            before = (folder / note.path).read_bytes()
            assert not save(folder, note), f"saving {note.path} again changed it"
            assert (folder / note.path).read_bytes() == before


text_meta = st.dictionaries(
    nasty_text(10),
    st.one_of(
        nasty_text(40),
        st.integers(),
        st.booleans(),
        st.none(),
        st.lists(nasty_text(10), max_size=3),
    ),
    max_size=6,
)


@examples(ci=40, full=10_000)
@given(data=text_meta, body=nasty_text(200))
@example(data={}, body="a\r\nb\rc")  # CR and CRLF came back as LF
@example(data={"handler": "x"}, body="b")  # Post(body, **meta): wrote "x" and nothing else
@example(data={"content": "x"}, body="b")  # Post(body, **meta): TypeError
def test_what_is_written_reads_back(data: dict[str, Any], body: str) -> None:
    with anima_folder() as folder:
        path = folder / "knowledge" / "n.md"
        write_document(path, data, body)
        assert read_document(path) == (data, body.strip())
        assert [p.name for p in path.parent.iterdir()] == ["n.md"]  # no temp file left


@examples(ci=30, full=5_000)
@given(old=text_meta, body=nasty_text(100), bad=st.sampled_from(["surrogate", "object"]))
def test_a_failed_write_leaves_the_old_file(old: dict[str, Any], body: str, bad: str) -> None:
    with anima_folder() as folder:
        path = folder / "knowledge" / "n.md"
        write_document(path, old, body)
        before = path.read_bytes()
        new: dict[str, Any] = {"title": body}
        if bad == "surrogate":  # fails in the middle of writing the file
            new_body = body + "\udc80" + body
        else:  # fails while rendering the front matter
            new, new_body = {"title": object()}, body
        try:
            write_document(path, new, new_body)
        except (UnicodeEncodeError, yaml.YAMLError):
            pass
        else:
            raise AssertionError("the write should have failed")
        assert path.read_bytes() == before
        assert [p.name for p in path.parent.iterdir()] == ["n.md"]


@examples(ci=60, full=10_000)
@example(relative="\x00.md")  # ValueError (embedded null byte), an API 500
@example(relative="a" * 300 + ".md")  # OSError (name too long), an API 500
@example(relative="x/" + "b" * 250 + ".md")  # accepted, then no file could be written
@given(
    relative=st.one_of(
        nasty_text(30),
        nasty_text(30).map(lambda s: s + ".md"),
        st.text(min_size=250, max_size=400).map(lambda s: s + ".md"),
    )
)
def test_memory_paths_are_inside_or_refused(relative: str) -> None:
    with anima_folder() as folder:
        try:
            path = memory_path(folder, relative)
        except MemoryPathError:
            return
        assert path.resolve().is_relative_to(folder.resolve()) and path.suffix == ".md"
        atomic_write(path, "accepted")  # a path it accepts can be written
        assert path.read_text(encoding="utf-8") == "accepted"
