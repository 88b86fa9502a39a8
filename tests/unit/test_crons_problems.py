"""hub.schedule.crons on bad crons/*.md sections: each fault is one problem with its file and line,
the other sections still load, and unreadable files or timezones are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.schedule.crons import CronBook, CronProblem, parse_cron_file, parse_cron_text
from tests.unit.crons_helpers import GOOD, TZ, parse


def only_problem(text: str) -> CronProblem:
    jobs, problems = parse(text)
    assert jobs == []
    assert len(problems) == 1, problems
    return problems[0]


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
