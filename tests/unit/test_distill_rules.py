"""The offline distiller's rules (hub/memory/distill.py, hub/memory/statements.py): the ways
people state facts, decisions, plans, habits, reminders, procedures and their own events,
in English and, where cheap, Japanese and Chinese."""

from __future__ import annotations

from datetime import date

import pytest

from hub.memory.distill import facts_in

S, P = "semantic", "procedural"
CASES = [
    ("We decided to ship the beta on Friday.", "decision: ship beta", S),
    ("The team agreed on weekly releases.", "decision: weekly releases", S),
    ("The release date was decided yesterday: March 3.", "decision: release date", S),
    ("The deploy procedure: run tests, tag, push, announce in #general", "how to deploy", P),
    ("We decided the release procedure: run tests, tag, push, announce", "how to release", P),
    ("Here is our release process: build, sign, upload", "how to release", P),
    ("Reminder: the staging database password rotates monthly", "staging database password", S),
    ("Next Tuesday we will demo the dashboard to the board.", "plan: demo dashboard board", S),
    ("We're going to move the standup to 10am.", "plan: move standup 10am", S),
    ("We always squash commits before merging.", "habit: squash commits merging", S),
    ("Yesterday I went to a support group.", "caroline went support group", S),
    ("The office wifi is Guest-5G.", "office wifi", S),
    ("リマインダー：パスワードは毎月変わります", "パスワードは毎月変わります", S),
    ("デプロイの手順：テスト、タグ付け、プッシュ", "how to デプロイ", P),
    ("我们决定周五发布测试版", "decision: 周五发布测试版", S),
    ("来週の火曜日にチームで京都へ出張します。", "plan: チームで京都へ出張", S),
    ("我们下周去北京出差。", "plan: 去北京出差", S),
    ("明天我们开会讨论预算。", "plan: 开会讨论预算", S),
    ("来週の月曜日に田中さんとミーティングがあります。", "plan: 田中さんとミーティング", S),
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


def test_what_a_person_said_of_themselves_reads_as_said_of_them() -> None:
    # The name as typed ("dana"), the sentence still starting upper case; their own words
    # after the subject in the third person; a title in the case it was written.
    (trip,) = facts_in("dana", "I went to Kyoto last weekend with my sister Emi.", "s1")
    assert trip.text == "Dana went to Kyoto last weekend with their sister Emi."
    (moved,) = facts_in("dana", "I moved to the US with my family.", "s1")
    assert moved.text == "Dana moved to the US with their family."
    (ours,) = facts_in("dana", "We celebrated our anniversary with friends of ours.", "s1")
    assert ours.text == "Dana and others celebrated their anniversary with friends of theirs."
    (own,) = facts_in("dana", "My dentist appointment is on Tuesday at 3pm.", "s1")
    assert own.text == "Dana's dentist appointment is on Tuesday at 3pm."
    (badge,) = facts_in("Fox Mulder", "My badge number is 4471", "s1")
    assert badge.title == "Fox Mulder's badge number"  # was "Fox mulder badge number"
    (both,) = facts_in("dana", "My locker code is 4521 and I prefer tea over coffee.", "s1")
    assert both.text == "Dana's locker code is 4521 and they prefer tea over coffee."
    (moods,) = facts_in(
        "dana", "My flat is in Leeds, I'm happy there and I was born in York.", "s1"
    )
    assert moods.text == "Dana's flat is in Leeds, they're happy there and they were born in York."
    (went,) = facts_in("dana", "I went to Iceland and I am going back, as I've said.", "s1")
    assert went.text == "Dana went to Iceland and they are going back, as they've said."
    (day,) = facts_in("dana", "I went hiking.", "s1", day=date(2026, 12, 5))
    assert (day.title, day.text) == ("Dana on 5 December 2026", "- Dana went hiking.")
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
    ],
)
def test_chatter_and_questions_are_not_kept(said: str) -> None:
    assert facts_in("Caroline", said, "s1") == []
