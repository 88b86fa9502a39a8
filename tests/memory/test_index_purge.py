"""Deleted points leave nothing in the embedded index's files (`EdgeIndex.purge`, what
forgetting a person runs; issue 41 class 1). Qdrant Edge only marks a point deleted: its
payload stays in the segment's pages and its upsert in the write-ahead log until the
shard is rewritten. A purge that a stop cut off is finished, or dropped, at the next open."""

from __future__ import annotations

import shutil
from pathlib import Path

from hub.memory.index import MemoryFilter, SearchMode
from hub.memory.index_edge import EdgeIndex
from tests.memory.test_index import DIM, MODEL, axis, point, sparse

SECRET = b"osprey-vault-5521"


def files_holding(folder: Path, word: bytes) -> list[str]:
    return [
        p.relative_to(folder).as_posix()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and word in p.read_bytes()
    ]


def filled(path: Path) -> tuple[EdgeIndex, str, str]:
    """An index holding a secret point and a kept one; their ids."""
    index = EdgeIndex(path)
    assert index.ensure(DIM, MODEL)
    secret = point(axis(0), sparse(7), text=SECRET.decode(), scope="person:dana")
    kept = point(axis(1), sparse(8), text="the office opens at nine", scope="shared")
    index.upsert([secret, kept])
    return index, secret.id, kept.id


def test_a_purge_leaves_no_byte_of_a_deleted_point(tmp_path: Path) -> None:
    index, secret, kept = filled(tmp_path / "index")
    index.delete([secret])
    assert files_holding(tmp_path, SECRET)  # deleted, and still on disk: what purge is for
    index.purge()
    assert files_holding(tmp_path, SECRET) == []
    # What is kept is whole: its payload, both its vectors, the payload indexes' filters.
    assert index.count() == 1 and index.count(MemoryFilter(anima="aria", scopes=("shared",))) == 1
    assert index.payloads([kept])[kept]["text"] == "the office opens at nine"
    for mode in (SearchMode.DENSE, SearchMode.LEXICAL):
        hits = index.query(axis(1), sparse(8), MemoryFilter(anima="aria"), 5, mode)
        assert [h.id for h in hits] == [kept]
    index.close()
    reopened = EdgeIndex(tmp_path / "index")
    assert reopened.ensure(DIM, MODEL) and reopened.count() == 1
    assert reopened.unindexed() == 1  # the next start's optimize_at counts the copied points
    reopened.close()


def test_a_purge_a_stop_cut_off_is_finished_or_dropped_at_open(tmp_path: Path) -> None:
    index, secret, _kept = filled(tmp_path / "index")
    index.delete([secret])
    index.purge()
    index.close()
    folder = tmp_path / "index"
    # Cut off while copying: the old shard is whole, the partial copy goes.
    shutil.copytree(folder / "shard", folder / "shard-new")
    again = EdgeIndex(folder)
    assert not (folder / "shard-new").exists() and again.count() == 1
    again.close()
    # Cut off between the renames: the copy was complete, so it becomes the shard, and
    # the old one (with what was deleted in it) goes.
    (folder / "shard").rename(folder / "shard-new")
    shutil.copytree(folder / "shard-new", folder / "shard-old")
    again = EdgeIndex(folder)
    assert (folder / "shard").is_dir() and again.count() == 1
    assert not (folder / "shard-new").exists() and not (folder / "shard-old").exists()
    again.close()
