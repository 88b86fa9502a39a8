"""hub.schedule.crons parsing of good crons/*.md sections: keys in any order and case, post_to
targets, bodies that keep their markdown, CJK, BOMs and CRLF line ends."""

from __future__ import annotations

from pathlib import Path

from hub.delivery.targets import DirectTarget
from hub.messages import Address, Command
from hub.roles import bundled_config_dir
from hub.schedule.crons import CronJob, parse_cron_file
from tests.unit.crons_helpers import TZ, parse

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
