"""CronBook: reloading a crons/ folder when its files are added, changed or removed, and
the problems it finds landing in the Anima's log."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub import logs
from hub.cli.main import app
from hub.schedule.crons import CronBook, CronJob, CronProblem
from tests.unit.crons_helpers import GOOD, TZ


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "animas" / "aria" / "crons"
    path.mkdir(parents=True)
    return path


def write(path: Path, text: str, bump: int = 0) -> None:
    """Write and move the mtime on, so a same-size rewrite within a tick is still seen."""
    path.write_text(text, encoding="utf-8")
    if bump:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + bump * 1_000_000_000))


def titles(book: CronBook) -> list[tuple[str, str]]:
    return [(j.file.name, j.title) for j in book.jobs]


def test_cronbook_reloads_added_modified_and_removed_files(folder: Path) -> None:
    book = CronBook("aria", folder, TZ)
    assert book.reload() is False
    assert book.jobs == [] and book.problems == []

    write(folder / "daily.md", GOOD)
    write(folder / "weekly.md", GOOD.replace("## Good", "## Weekly"))
    (folder / "notes.txt").write_text(GOOD, encoding="utf-8")
    (folder / ".draft.md").write_text(GOOD, encoding="utf-8")
    assert book.reload() is True
    assert titles(book) == [("daily.md", "Good"), ("weekly.md", "Weekly")]
    assert all(j.file.is_absolute() for j in book.jobs)
    assert book.reload() is False

    write(folder / "daily.md", GOOD.replace("## Good", "## Gold"), bump=5)  # same size
    assert book.reload() is True
    assert titles(book) == [("daily.md", "Gold"), ("weekly.md", "Weekly")]

    write(folder / "daily.md", GOOD + "\n## Bad\nschedule: 0 9 * * *\n", bump=10)
    assert book.reload() is True
    assert titles(book) == [("daily.md", "Good"), ("weekly.md", "Weekly")]
    assert [str(p) for p in book.problems] == [
        "crons/daily.md:6: cron 'Bad' has no 'type:' line: add 'type: llm' or 'type: command'"
    ]

    write(folder / "monthly.md", GOOD.replace("## Good", "## Monthly"))
    assert book.reload() is True
    assert [name for name, _ in titles(book)] == ["daily.md", "monthly.md", "weekly.md"]

    (folder / "weekly.md").unlink()
    write(folder / "daily.md", GOOD, bump=15)
    assert book.reload() is True
    assert titles(book) == [("daily.md", "Good"), ("monthly.md", "Monthly")]
    assert book.problems == []
    assert book.reload() is False


def test_cronbook_reads_only_the_files_that_changed(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hub.schedule import crons

    write(folder / "a.md", GOOD)
    write(folder / "b.md", GOOD)
    book = CronBook("aria", folder, TZ)
    book.reload()
    read: list[str] = []
    real = crons.parse_cron_file

    def spy(anima: str, path: Path, timezone: str) -> tuple[list[CronJob], list[CronProblem]]:
        read.append(path.name)
        return real(anima, path, timezone)

    monkeypatch.setattr(crons, "parse_cron_file", spy)
    write(folder / "b.md", GOOD + "\n", bump=3)
    assert book.reload() is True
    assert read == ["b.md"]


def test_cronbook_without_a_folder_is_empty_and_notices_it_appearing(tmp_path: Path) -> None:
    folder = tmp_path / "crons"
    book = CronBook("aria", folder, TZ)
    assert book.reload() is False
    folder.mkdir()
    write(folder / "daily.md", GOOD)
    assert book.reload() is True
    assert titles(book) == [("daily.md", "Good")]
    (folder / "daily.md").unlink()
    folder.rmdir()
    assert book.reload() is True
    assert book.jobs == []


@pytest.fixture
def configured_logs(home: Path) -> Iterator[Path]:
    """hub.logs.configure on a temporary home; the root logger is restored afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    logs.configure(home, level="INFO", console=False)
    yield home
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in saved_handlers:
        root.addHandler(handler)
    root.setLevel(saved_level)


def test_problems_land_in_the_animas_log(
    configured_logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = configured_logs
    folder = home / "animas" / "aria" / "crons"
    folder.mkdir(parents=True)
    write(folder / "daily.md", GOOD + "\n## Typo\nshedule: 0 9 * * *\ntype: llm\nHi\n")
    book = CronBook("aria", folder, TZ)
    assert book.reload() is True
    assert [j.title for j in book.jobs] == ["Good"]

    log_file = logs.anima_log_path(home, "aria")
    lines = log_file.read_text(encoding="utf-8").splitlines()
    errors = [line for line in lines if " ERROR " in line]
    assert len(errors) == 1
    assert errors[0].endswith("crons/daily.md:7: unknown key 'shedule' (did you mean 'schedule'?)")
    assert not logs.anima_log_path(home, "kai").exists()

    # and `animahub logs aria` shows it
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    result = CliRunner().invoke(app, ["logs", "aria", "-n", "20"])
    assert result.exit_code == 0, result.output
    assert "crons/daily.md:7: unknown key 'shedule'" in result.output

    # an unchanged file is not logged again; a fixed one logs no error
    assert book.reload() is False
    write(folder / "daily.md", GOOD, bump=5)
    assert book.reload() is True
    lines = log_file.read_text(encoding="utf-8").splitlines()
    assert len([line for line in lines if " ERROR " in line]) == 1
