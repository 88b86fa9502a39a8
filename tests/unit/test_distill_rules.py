"""The offline distiller's rules (hub/memory/distill.py, hub/memory/statements.py): the ways
people state facts, decisions, plans, habits, reminders, procedures and their own events,
in English and, where cheap, Japanese and Chinese."""

from __future__ import annotations

from datetime import date

import pytest

from hub.memory.distill import facts_in, lead, merge_texts

S, P = "semantic", "procedural"
CASES = [
    ("We decided to ship the beta on Friday.", "decision: ship beta", S),
    ("The team agreed on weekly releases.", "decision: weekly releases", S),
    ("The release date was decided yesterday: March 3.", "decision: release date", S),
    ("The deploy procedure: run tests, tag, push, announce in #general", "how to deploy", P),
    ("We decided the release procedure: run tests, tag, push, announce", "how to release", P),
    ("Here is our release process: build, sign, upload", "how to release", P),
    ("Reminder: the staging database password rotates monthly", "staging database password", S),
    ("Rule: no deploys on Fridays.", "no deploys on", S),
    ("House rule: do not deploy on Fridays.", "do not deploy", S),
    ("Next Tuesday we will demo the dashboard to the board.", "plan: demo dashboard board", S),
    ("We're going to move the standup to 10am.", "plan: move standup 10am", S),
    ("We always squash commits before merging.", "habit: squash commits merging", S),
    ("Yesterday I went to a support group.", "caroline went support group", S),
    ("The office wifi is Guest-5G.", "office wifi", S),
    ("Update: the office wifi is now Guest-6G.", "office wifi", S),
    ("Actually, the office wifi is Guest-6G.", "office wifi", S),
    ("Correction: the office wifi is Guest-6G.", "office wifi", S),
    ("We decided to use MySQL for the billing.", "decision: what to use for billing", S),
    ("We went with Slack as our chat tool.", "decision: what to use for chat tool", S),
    ("We decided to ship the beta on April 2 instead.", "decision: ship beta", S),
    ("リマインダー：パスワードは毎月変わります", "パスワードは毎月変わります", S),
    ("デプロイの手順：テスト、タグ付け、プッシュ", "how to デプロイ", P),
    ("我们决定周五发布测试版", "decision: 周五发布测试版", S),
    ("来週の火曜日にチームで京都へ出張します。", "plan: チームで京都へ出張", S),
    ("我们下周去北京出差。", "plan: 去北京出差", S),
    ("明天我们开会讨论预算。", "plan: 开会讨论预算", S),
    ("来週の月曜日に田中さんとミーティングがあります。", "plan: 田中さんとミーティング", S),
    ("私は来週の火曜日に大阪へ出張します。", "caroline plans 大阪へ出張", S),
    ("我下周去北京出差。", "caroline plans 去北京出差", S),
    ("我们决定周五发布测试版。", "decision: 周五发布测试版", S),
    ("チームはリリースを金曜日にすることに決めました。", "decision: リリースを金曜日にする", S),
    # A person's own plans and events (kept in their day's log when the day is known).
    ("I'm flying to Osaka next Tuesday.", "caroline plans flying osaka", S),
    ("I'm planning to start a volunteer program.", "caroline plans start volunteer program", S),
    ("私は先週京都に行きました。", "caroline 京都に行き", S),
    ("昨日、新しいプロジェクトを始めました。", "caroline 新しいプロジェクトを始め", S),
    ("我上周去了上海。", "caroline 去了上海", S),
]


@pytest.mark.parametrize(("said", "subject", "layer"), CASES)
def test_a_way_of_saying_it_is_kept(said: str, subject: str, layer: str) -> None:
    (fact,) = facts_in("Caroline", said, "s1")
    assert (fact.subject, fact.layer.value) == (subject, layer)


def test_what_is_kept_reads_as_it_was_said() -> None:
    (event,) = facts_in("Caroline", "Yesterday I went to a support group.", "s1")
    assert event.text == "Yesterday Caroline went to a support group."
    (procedure,) = facts_in("Sam", "The deploy procedure: run tests, tag, push", "s1")
    assert procedure.text == "1. run tests\n2. tag\n3. push"


# The name as typed ("dana"), the sentence still starting upper case; their own words
# after the subject in the third person.
AS_SAID_OF_THEM = [
    (
        "I went to Kyoto last weekend with my sister Emi.",
        "Dana went to Kyoto last weekend with their sister Emi.",
    ),
    ("I moved to the US with my family.", "Dana moved to the US with their family."),
    (
        "We celebrated our anniversary with friends of ours.",
        "Dana and others celebrated their anniversary with friends of theirs.",
    ),
    (
        "My dentist appointment is on Tuesday at 3pm.",
        "Dana's dentist appointment is on Tuesday at 3pm.",
    ),
    (
        "My locker code is 4521 and I prefer tea over coffee.",
        "Dana's locker code is 4521 and they prefer tea over coffee.",
    ),
    (
        "My flat is in Leeds, I'm happy there and I was born in York.",
        "Dana's flat is in Leeds, they're happy there and they were born in York.",
    ),
    (
        "I went to Iceland and I am going back, as I've said.",
        "Dana went to Iceland and they are going back, as they've said.",
    ),
    (
        "Next Tuesday I will fly to Osaka with my team.",
        "Next Tuesday Dana will fly to Osaka with their team.",
    ),
    ("I’m going to visit my parents in May.", "Dana is going to visit their parents in May."),
    (
        "I plan on submitting it to a film festival.",
        "Dana plans on submitting it to a film festival.",
    ),
    ("私は先週京都に行きました。", "Danaは先週京都に行きました。"),
    ("私は来週大阪へ出張します。", "Danaは来週大阪へ出張します。"),
    ("我上周去了上海。", "Dana上周去了上海。"),
    ("私たちは来週京都へ行きます。", "私たちは来週京都へ行きます。"),  # "we", not Dana alone
]


@pytest.mark.parametrize(("said", "kept"), AS_SAID_OF_THEM)
def test_what_a_person_said_of_themselves_reads_as_said_of_them(said: str, kept: str) -> None:
    (fact,) = facts_in("dana", said, "s1")
    assert fact.text == kept


def test_titles_days_and_run_on_sentences() -> None:
    (badge,) = facts_in("Fox Mulder", "My badge number is 4471", "s1")
    assert badge.title == "Fox Mulder's badge number"  # a title in the case it was written
    (day,) = facts_in("dana", "I went hiking.", "s1", day=date(2026, 12, 5))
    assert (day.title, day.text) == ("Dana on 5 December 2026", "- Dana went hiking.")
    # CJK sentences run on with no space between them; each is its own.
    both_ja = facts_in("dana", "先週京都に行きました。来週の月曜日に大阪へ出張します。", "s1")
    assert [f.subject for f in both_ja] == ["dana 京都に行き", "plan: 大阪へ出張"]
    (renew,) = facts_in("dana", "Reminder: renew the SSL certificate before January 5.", "s1")
    assert (renew.subject, renew.title) == ("renew the ssl", "Renew the SSL")


@pytest.mark.parametrize(
    "said",
    [
        "I'm tired.",
        "What did we decide?",
        "We should maybe think about it?",
        "ok",
        "I think so.",
        "来週の予定は？",
        "明天要下雨。",
        # A promise in passing says no when; the rain is not the person's own doing.
        "I'll keep that in mind.",
        "I'm going to miss you.",
        "I am hoping to win.",
        "昨日、雨が降りました。",
    ],
)
def test_chatter_and_questions_are_not_kept(said: str) -> None:
    assert facts_in("Caroline", said, "s1") == []


def test_a_cjk_text_is_split_into_its_sentences_with_no_space_after_the_stop() -> None:
    """A session summary leads with a turn's first sentences, and a merge adds only the
    sentences a note does not say yet: 「…行きました。来週…」 is two sentences."""
    said = "私は先週京都に行きました。来週の月曜日に大阪へ出張します。楽しみです！"
    assert lead(said, 300) == "私は先週京都に行きました。"
    assert lead(said, 300, 2) == "私は先週京都に行きました。来週の月曜日に大阪へ出張します。"
    assert lead("我上周去了上海。下周去北京。", 300) == "我上周去了上海。"
    assert lead("We shipped. Then we rested.", 300, 2) == "We shipped. Then we rested."
    merged = merge_texts(["京都に行きました。", "京都に行きました。大阪に行きます。"])
    assert merged == "京都に行きました。\n\n大阪に行きます。"


def test_a_persons_own_plan_in_japanese_or_chinese_goes_in_their_days_log() -> None:
    """「私は来週京都に行きます」 was filed as a plan of everyone's ("Plan: 京都に行き");
    "I'm flying to Osaka next week" goes in the person's log of the day, and so does this."""
    day = date(2026, 12, 6)
    for said, kept in (
        ("私は来週京都に行きます。", "- Danaは来週京都に行きます。"),
        ("我下周去北京出差。", "- Dana下周去北京出差。"),
    ):
        (fact,) = facts_in("Dana", said, "s1", day=day)
        assert (fact.subject, fact.text, fact.accumulates) == ("dana 2026-12-06", kept, True)
    (shared,) = facts_in("Dana", "来週の火曜日にチームで京都へ出張します。", "s1", day=day)
    assert shared.subject == "plan: チームで京都へ出張"  # the team's plan stays everyone's
