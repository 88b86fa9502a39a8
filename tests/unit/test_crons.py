"""Tests for hub.crons: parsing crons/*.md, the problems it reports, reloading on change."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from hub import logs
from hub.cli import app
from hub.crons import CronBook, CronJob, CronProblem, parse_cron_file, parse_cron_text
from hub.messages import Address, Command
from hub.roles import bundled_config_dir
from hub.targets import DirectTarget

TZ = "Asia/Tokyo"

EXAMPLE = """\
# Anything before the first "## " heading is ignored (a title, notes).

## Morning digest
schedule: 0 9 * * 1-5
type: llm
post_to: web:local/general, slack:T012AB/C0456CD
Summarize what happened yesterday and list open questions for the team.
The body may span several lines and contain markdown.

## Weekly heartbeat check
schedule: 30 17 * * fri
type: command
/anima heartbeat aria
"""

GOOD = """\
## Good
schedule: 0 9 * * *
type: llm
Say good morning.
"""


def parse(text: str, name: str = "daily.md") -> tuple[list[CronJob], list[CronProblem]]:
    return parse_cron_text("aria", Path("/data/animas/aria/crons") / name, text, TZ)


def only_problem(text: str) -> CronProblem:
    jobs, problems = parse(text)
    assert jobs == []
    assert len(problems) == 1, problems
    return problems[0]


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, tz: str = TZ) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz))


# --- good sections -------------------------------------------------------------------------


def test_the_issue_example_parses_as_written() -> None:
    jobs, problems = parse(EXAMPLE)
    assert problems == []
    digest, heartbeat = jobs
    assert digest == CronJob(
        anima="aria",
        file=Path("/data/animas/aria/crons/daily.md"),
        line=3,
        title="Morning digest",
        schedule="0 9 * * 1-5",
        kind="llm",
        post_to=(Address("web", "local", "general"), Address("slack", "T012AB", "C0456CD")),
        body=(
            "Summarize what happened yesterday and list open questions for the team.\n"
            "The body may span several lines and contain markdown."
        ),
        command=None,
    )
    assert heartbeat.line == 10
    assert heartbeat.title == "Weekly heartbeat check"
    assert heartbeat.schedule == "30 17 * * fri"
    assert heartbeat.kind == "command"
    assert heartbeat.post_to == ()
    assert heartbeat.body == "/anima heartbeat aria"
    assert heartbeat.command == Command("anima", ("heartbeat", "aria"))


def test_the_bundled_example_file_loads_without_problems() -> None:
    path = bundled_config_dir() / "crons" / "example.md"
    jobs, problems = parse_cron_file("aria", path, TZ)
    assert problems == []
    assert [(j.title, j.kind) for j in jobs] == [
        ("Morning digest", "llm"),
        ("Weekly heartbeat check", "command"),
    ]
    assert jobs[0].file == path.absolute()
    assert jobs[1].command == Command("anima", ("heartbeat", "aria"))


def test_keys_in_any_order_and_any_case_with_blank_lines_before_the_body() -> None:
    jobs, problems = parse(
        "## Status\n\nTYPE: Command\nPost_To: web:local/ops\nSchedule:   */15 * * * *  \n\n"
        "\n/anima status aria\n\n"
    )
    assert problems == []
    (job,) = jobs
    assert job.kind == "command"
    assert job.schedule == "*/15 * * * *"
    assert job.post_to == (Address("web", "local", "ops"),)
    assert job.command == Command("anima", ("status", "aria"))


def test_post_to_takes_a_persons_dm_next_to_addresses() -> None:
    jobs, problems = parse(
        "## Briefing\nschedule: 0 7 * * *\ntype: llm\n"
        "post_to: dm:telegram:123456789, dm:line:U4af4980629, telegram:42/-1001#7\nBrief me.\n"
    )
    assert problems == []
    assert jobs[0].post_to == (
        DirectTarget("telegram", "123456789"),
        DirectTarget("line", "U4af4980629"),
        Address("telegram", "42", "-1001", "7"),
    )
    assert [str(t) for t in jobs[0].post_to][:2] == ["dm:telegram:123456789", "dm:line:U4af4980629"]


def test_report_to_is_post_to_by_another_name() -> None:
    jobs, problems = parse(
        "## Weekly\nschedule: 0 17 * * fri\ntype: llm\n"
        "report_to: notion:notion/0c9e8b7a-1f2d-4e5f-9a8b-7c6d5e4f3a2b, web:local/ops\nSum up.\n"
    )
    assert problems == []
    assert [str(t) for t in jobs[0].post_to] == [
        "notion:notion/0c9e8b7a-1f2d-4e5f-9a8b-7c6d5e4f3a2b",
        "web:local/ops",
    ]
    _, twice = parse(
        "## W\nschedule: 0 17 * * fri\ntype: llm\npost_to: web:local/a\nreport_to: web:local/b\nx\n"
    )
    assert [p.reason for p in twice] == ["post_to given twice (first on line 4)"]


def test_an_unknown_word_colon_line_that_is_no_misspelling_starts_the_body() -> None:
    jobs, problems = parse(
        "## Review\nschedule: 0 10 * * mon\ntype: llm\nContext: the release is Friday.\n"
        "Check the open pull requests.\n"
    )
    assert problems == []
    assert jobs[0].body == "Context: the release is Friday.\nCheck the open pull requests."


def test_a_key_after_a_blank_line_is_body() -> None:
    jobs, problems = parse(
        "## Notes\nschedule: 0 9 * * *\ntype: llm\n\npost_to: is what I write to you\n"
    )
    assert problems == []
    assert jobs[0].post_to == ()
    assert jobs[0].body == "post_to: is what I write to you"


def test_the_body_keeps_markdown_and_fenced_headings() -> None:
    text = (
        "## Report\nschedule: 0 9 * * *\ntype: llm\nWrite the report:\n\n"
        "### Sections\n- done\n- next\n\n```markdown\n## Not a new cron\n```\n"
        "## Second\nschedule: 0 10 * * *\ntype: llm\nMore.\n"
    )
    jobs, problems = parse(text)
    assert problems == []
    assert [j.title for j in jobs] == ["Report", "Second"]
    assert jobs[0].body.endswith("```markdown\n## Not a new cron\n```")
    assert "### Sections" in jobs[0].body
    assert jobs[1].line == 13


def test_command_arguments_are_shell_split() -> None:
    jobs, problems = parse('## Note\nschedule: 0 9 * * *\ntype: command\n/anima note aria "a b"\n')
    assert problems == []
    assert jobs[0].command == Command("anima", ("note", "aria", "a b"))


def test_cjk_titles_and_bodies() -> None:
    jobs, problems = parse(
        "# 定期タスク\n\n## 朝のまとめ\nschedule: 0 9 * * 1-5\ntype: llm\n"
        "昨日の出来事をまとめてください。\n"
        "## 週次チェック\nschedule: 0 17 * * 5\ntype: command\n/anima status aria\n"
    )
    assert problems == []
    assert [j.title for j in jobs] == ["朝のまとめ", "週次チェック"]
    assert jobs[0].body == "昨日の出来事をまとめてください。"
    assert jobs[0].key == "cron:aria:daily.md:朝のまとめ"
    assert jobs[1].key == "cron:aria:daily.md:週次チェック"


def test_a_utf8_bom_and_crlf_line_ends_are_accepted() -> None:
    jobs, problems = parse("\ufeff## Morning\r\nschedule: 0 9 * * *\r\ntype: llm\r\nHello.\r\n")
    assert problems == []
    assert jobs[0].title == "Morning"
    assert jobs[0].body == "Hello."


def test_a_file_without_sections_has_no_jobs_and_no_problems() -> None:
    assert parse("# Just notes\n\nNothing scheduled yet.\n") == ([], [])
    assert parse("") == ([], [])


# --- bad sections --------------------------------------------------------------------------


BAD_CASES = [
    pytest.param(
        "## A\nschedule: 0 25 * * *\ntype: llm\nHi\n", 2, "schedule '0 25 * * *'", id="hour-25"
    ),
    pytest.param(
        "## A\nschedule: every morning\ntype: llm\nHi\n",
        2,
        "schedule 'every morning' has 2 field(s); expected 5",
        id="words",
    ),
    pytest.param(
        "## A\nschedule: @daily\ntype: llm\nHi\n", 2, "schedule '@daily' has 1 field", id="at-daily"
    ),
    pytest.param(
        "## A\nschedule: 0 0 9 * * 1-5\ntype: llm\nHi\n",
        2,
        "schedule '0 0 9 * * 1-5' has 6 field(s)",
        id="six-fields",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * 8\ntype: llm\nHi\n",
        2,
        "schedule '0 9 * * 8': day of week '8'",
        id="weekday-8",
    ),
    pytest.param(
        "## A\nschedule: 0 9 1 * mon\ntype: llm\nHi\n",
        2,
        "sets both the day of month and the day of week",
        id="day-and-weekday",
    ),
    pytest.param("## A\nschedule:\ntype: llm\nHi\n", 2, "schedule '' has 0 field", id="empty"),
    pytest.param("## A\ntype: llm\nHi\n", 1, "cron 'A' has no 'schedule:' line", id="no-schedule"),
    pytest.param(
        "## A\nschedule: 0 9 * * *\nHi\n", 1, "cron 'A' has no 'type:' line", id="no-type"
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: shell\nHi\n",
        3,
        "type 'shell' is not 'llm' or 'command'",
        id="bad-type",
    ),
    pytest.param(
        "## A\nshedule: 0 9 * * *\nschedule: 0 9 * * *\ntype: llm\nHi\n",
        2,
        "unknown key 'shedule' (did you mean 'schedule'?)",
        id="misspelt-schedule",
    ),
    pytest.param(
        "## A\ntpye: llm\nschedule: 0 9 * * *\nHi\n",
        2,
        "unknown key 'tpye' (did you mean 'type'?)",
        id="misspelt-type-not-also-missing",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: llm\npost-to: web:local/general\nHi\n",
        4,
        "unknown key 'post-to' (did you mean 'post_to'?)",
        id="misspelt-post_to",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\nschedule: 0 10 * * *\ntype: llm\nHi\n",
        3,
        "schedule given twice (first on line ",
        id="twice",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: llm\npost_to: web:local/general, general\nHi\n",
        4,
        "post_to 'general' is not an address",
        id="bad-address",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: llm\npost_to: dm:telegram\nHi\n",
        4,
        "post_to 'dm:telegram' is not an address",
        id="dm-without-user",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: llm\npost_to: ,\nHi\n",
        4,
        "post_to is empty",
        id="empty-post_to",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: llm\n\n\n", 1, "cron 'A' has no task text", id="no-body"
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: command\n\n",
        1,
        "cron 'A' has no command below its keys",
        id="no-command",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: command\nanima status aria\n",
        4,
        "'anima status aria' is not a hub command: it must start with '/'",
        id="no-slash",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: command\n/ status\n",
        4,
        "command '/ status' has no name after '/'",
        id="no-name",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: command\n/anima note 'open\n",
        4,
        'cannot read command "/anima note \'open"',
        id="unbalanced-quote",
    ),
    pytest.param(
        "## A\nschedule: 0 9 * * *\ntype: command\n/anima status aria\n\nthen tell kai\n",
        6,
        "more text after the command",
        id="two-lines",
    ),
    pytest.param("## \nschedule: 0 9 * * *\ntype: llm\nHi\n", 1, "needs a title", id="no-title"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD_CASES)
def test_a_bad_section_is_one_problem_with_its_line(text: str, line: int, reason: str) -> None:
    problem = only_problem(text)
    assert problem.file == Path("/data/animas/aria/crons/daily.md")
    assert problem.line == line
    assert reason in problem.reason
    assert str(problem) == f"crons/daily.md:{line}: {problem.reason}"


@pytest.mark.parametrize(("text", "line", "reason"), BAD_CASES)
def test_the_other_sections_still_load(text: str, line: int, reason: str) -> None:
    first = GOOD.replace("## Good", "## First")
    last = GOOD.replace("## Good", "## Last")
    offset = first.count("\n")
    jobs, problems = parse(first + text + last)
    assert [j.title for j in jobs] == ["First", "Last"]
    assert [(p.line, reason in p.reason) for p in problems] == [(line + offset, True)]
    assert jobs[1].line == offset + text.count("\n") + 1


def test_a_section_with_several_faults_reports_each() -> None:
    jobs, problems = parse("## A\nschedule: 61 * * * *\ntype: cron\npost_to: nowhere\n")
    assert jobs == []
    assert [p.line for p in problems] == [2, 3, 4]


def test_a_duplicate_title_is_an_error_on_the_second() -> None:
    second = GOOD.replace("good morning", "hello")
    jobs, problems = parse(GOOD + "\n" + second)
    assert [(j.line, j.body) for j in jobs] == [(1, "Say good morning.")]
    assert [str(p) for p in problems] == [
        "crons/daily.md:6: duplicate title 'Good' (first on line 1)"
    ]


def test_titles_that_give_the_same_id_are_duplicates() -> None:
    _, problems = parse(GOOD + GOOD.replace("## Good", "##   GOOD  "))
    assert [p.line for p in problems] == [5]


def test_keys_before_the_first_heading_are_reported() -> None:
    jobs, problems = parse("# Morning\nschedule: 0 9 * * *\ntype: llm\nHi\n" + GOOD)
    assert [j.title for j in jobs] == ["Good"]
    assert [(p.line, p.reason.startswith("'schedule:' before the first")) for p in problems] == [
        (2, True),
        (3, False),
    ]


def test_unreadable_and_non_utf8_files_are_problems(tmp_path: Path) -> None:
    bad = tmp_path / "crons" / "bad.md"
    bad.parent.mkdir()
    bad.write_bytes(b"## A\nschedule: 0 9 * * *\ntype: llm\n\xff\xfe\n")
    assert parse_cron_file("aria", bad, TZ) == ([], [CronProblem(bad, 4, "not UTF-8 text")])
    jobs, problems = parse_cron_file("aria", tmp_path / "crons" / "missing.md", TZ)
    assert jobs == [] and problems[0].line == 0
    assert str(problems[0]).startswith("crons/missing.md: cannot read")


def test_an_unknown_timezone_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown timezone 'Mars/Base'"):
        parse_cron_text("aria", Path("x.md"), GOOD, "Mars/Base")
    with pytest.raises(ValueError, match="unknown timezone"):
        CronBook("aria", Path("crons"), "")
    (job,) = parse(GOOD)[0]
    with pytest.raises(ValueError, match="unknown timezone 'Tokyo'"):
        job.trigger("Tokyo")


# --- keys and triggers ---------------------------------------------------------------------


def test_the_key_survives_edits_of_schedule_type_and_body_and_follows_the_title() -> None:
    (job,) = parse(GOOD)[0]
    assert job.key == "cron:aria:daily.md:good"
    (edited,) = parse("\n\n## Good\ntype: command\nschedule: 5 5 * * *\n/anima status aria\n")[0]
    assert edited.key == job.key
    (renamed,) = parse(GOOD.replace("## Good", "## Better"))[0]
    assert renamed.key == "cron:aria:daily.md:better"
    (moved,) = parse(GOOD, name="weekly.md")[0]
    assert moved.key == "cron:aria:weekly.md:good"
    (mixed,) = parse(GOOD.replace("## Good", "## Morning  Digest!"))[0]
    assert mixed.key == "cron:aria:daily.md:morning-digest"


def test_a_title_without_letters_still_gets_a_distinct_key() -> None:
    jobs, problems = parse(GOOD.replace("## Good", "## 🚀") + GOOD.replace("## Good", "## 🌙"))
    assert problems == []
    first, second = (j.key for j in jobs)
    assert first.startswith("cron:aria:daily.md:") and first != second
    assert len(first) > len("cron:aria:daily.md:")


def test_the_trigger_fires_in_the_given_timezone() -> None:
    (job,) = parse(GOOD)[0]  # 09:00 every day
    now = at(2026, 3, 2, 10, 0)  # Monday 10:00 in Tokyo: today's run has passed
    assert job.trigger(TZ).get_next_fire_time(None, now) == at(2026, 3, 3, 9, 0)
    utc_next = job.trigger("UTC").get_next_fire_time(None, now)
    assert utc_next == at(2026, 3, 2, 9, 0, tz="UTC")  # 10:00 Tokyo is 01:00 UTC
    assert utc_next.astimezone(ZoneInfo(TZ)) == at(2026, 3, 2, 18, 0)


@pytest.mark.parametrize(
    ("weekdays", "next_day", "weekday"),
    [
        ("1-5", (2026, 3, 2), "Mon"),  # crontab 1-5: Monday to Friday, not Tuesday to Saturday
        ("0", (2026, 3, 1), "Sun"),
        ("7", (2026, 3, 1), "Sun"),
        ("sun", (2026, 3, 1), "Sun"),
        ("fri", (2026, 3, 6), "Fri"),
        ("5-7", (2026, 3, 1), "Sun"),
        ("*/2", (2026, 3, 1), "Sun"),  # 0,2,4,6 = Sun, Tue, Thu, Sat
        ("6", (2026, 3, 7), "Sat"),
    ],
)
def test_weekdays_count_as_in_crontab(
    weekdays: str, next_day: tuple[int, int, int], weekday: str
) -> None:
    (job,) = parse(GOOD.replace("0 9 * * *", f"0 9 * * {weekdays}"))[0]
    now = at(2026, 2, 28, 10, 0)  # a Saturday, after 09:00
    fire = job.trigger(TZ).get_next_fire_time(None, now)
    assert fire == at(*next_day, 9, 0)
    assert fire.strftime("%a") == weekday


# --- CronBook ------------------------------------------------------------------------------


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
    import hub.crons

    write(folder / "a.md", GOOD)
    write(folder / "b.md", GOOD)
    book = CronBook("aria", folder, TZ)
    book.reload()
    read: list[str] = []
    real = hub.crons.parse_cron_file

    def spy(anima: str, path: Path, timezone: str) -> tuple[list[CronJob], list[CronProblem]]:
        read.append(path.name)
        return real(anima, path, timezone)

    monkeypatch.setattr(hub.crons, "parse_cron_file", spy)
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
