"""A row rewritten to redact a secret leaves no copy of the secret in SQLite's files: not in
the page's free space (`secure_delete`), not in the write-ahead log (`Database.scrub`)."""

from __future__ import annotations

from pathlib import Path

from hub.store.db import Database, scrub_after_commit

SECRET = "Tr0ub4dor&3-horse-battery"


def _files(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file())


def _rewrite(tmp_path: Path, checkpoint_between: bool, scrub: bool) -> bytes:
    db = Database(f"sqlite:///{tmp_path / 'hub.db'}")
    try:
        with db.write() as conn:
            conn.exec_driver_sql("CREATE TABLE said (id INTEGER PRIMARY KEY, text TEXT)")
            conn.exec_driver_sql(f"INSERT INTO said VALUES (1, 'the password: {SECRET}')")
            conn.exec_driver_sql("INSERT INTO said VALUES (2, 'a neighbour on the same page')")
        if checkpoint_between:  # a long turn: the row reached the database file meanwhile
            db.scrub()
        with db.write() as conn:
            conn.exec_driver_sql("UPDATE said SET text = 'the password: [x]' WHERE id = 1")
            if scrub:
                scrub_after_commit(conn)
        return _files(tmp_path)
    finally:
        db.dispose()


def test_a_redacted_row_leaves_no_copy_in_the_log_or_the_page(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert SECRET.encode() not in _rewrite(tmp_path / "a", checkpoint_between=False, scrub=True)
    assert SECRET.encode() not in _rewrite(tmp_path / "b", checkpoint_between=True, scrub=True)


def test_every_connection_zeroes_what_it_frees(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'hub.db'}")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
    db.dispose()


def test_without_the_mark_the_log_still_holds_it(tmp_path: Path) -> None:
    # What the mark is for: a plain update leaves the old version in the write-ahead log.
    assert SECRET.encode() in _rewrite(tmp_path, checkpoint_between=False, scrub=False)
