"""The tool registry, the offline responder, and the one-hub-per-data-root lock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hub.cli.runfile import HubBusy, hold_data_root, hold_database, running_hub
from hub.model.client import classify
from hub.model.tool_registry import ToolContext, ToolRegistry, builtin_tools
from hub.people.identity import PersonView
from hub.turns.llm import TurnContext
from hub.turns.offline import OfflineResponder, compose

CTX = ToolContext("aria", "alice", False, "web:local/dm:aria:alice#s", "Asia/Tokyo")


async def test_current_time_tool_and_errors_the_model_can_read() -> None:
    tools = builtin_tools()
    assert tools.names() == ["current_time"]
    assert tools.schemas()[0]["function"]["parameters"]["type"] == "object"
    assert "(Asia/Tokyo)" in await tools.call("current_time", "{}", CTX)
    assert "(UTC)" in await tools.call("current_time", '{"timezone": "UTC"}', CTX)
    assert "unknown timezone" in await tools.call("current_time", '{"timezone": "Mars/X"}', CTX)
    assert "no tool named" in await tools.call("launch_rockets", "{}", CTX)
    assert "not valid JSON" in await tools.call("current_time", "{oops", CTX)
    assert "JSON object" in await tools.call("current_time", "[1]", CTX)


def test_registering_a_tool_twice_is_refused() -> None:
    tools = builtin_tools()
    from hub.model.tool_registry import CURRENT_TIME

    with pytest.raises(ValueError, match="already registered"):
        tools.register(CURRENT_TIME)
    assert ToolRegistry().schemas() == []


def context(text: str, earlier: list[str], **extra: Any) -> TurnContext:
    person = PersonView("alice", "Alice", (), "UTC", "en", None)
    return TurnContext(
        anima="aria",
        anima_title="Researcher",
        anima_summary="find, read and weigh sources",
        identity="# Aria",
        model="",
        person=person,
        where="a direct conversation on web",
        history=[],
        text=text,
        tools=CTX,
        earlier_from_person=earlier,
        **extra,
    )


async def test_offline_reply_is_honest_personal_and_streamed() -> None:
    first = compose(context("hello", []))
    assert "Hello Alice" in first and "Aria" in first and "researcher" in first
    assert "No language model is configured" in first
    assert "ANIMAHUB_LLM__MODEL" in first and "[llm]" in first and "“hello”" in first
    later = compose(context("What did I ask?", ["first question", "second question"]))
    assert "Before this, you said:\n- “first question”\n- “second question”" in later
    assert "“What did I ask?”" in later
    assert "no language model is configured" in later and "ANIMAHUB_LLM__MODEL" in later
    assert len(later) < len(first)  # the full how-to is said once
    # Told before, in another conversation: one line, from the first message on.
    elsewhere = compose(context("hello again", [], offline_intro=False))
    assert "Hello Alice" not in elsewhere and "_(Offline mode:" in elsewhere
    pieces = [p async for p in OfflineResponder().stream(context("hi", []))]
    assert len(pieces) > 10 and "".join(pieces) == compose(context("hi", []))
    assert "start of our conversation" in "".join(pieces)


def test_offline_answers_lead_with_what_matches_and_say_when_nothing_does() -> None:
    recalled = [
        "[2026-12-01 09:30] Alice: The budget code is TANGO-7731.",
        "[2026-12-02 08:00] Alice: we had lunch at noon",  # recent, and beside the point
        "[2026-11-20 10:00] deploy procedure: run tests, tag, push",
    ]
    about = ["I prefer short status updates _(mika, 2026-12-01)_"]
    asked = compose(
        context("What was the budget code?", ["hi"], recalled_lines=recalled, about_person=about)
    )
    assert "From my memory:\n- [2026-12-01 09:30] Alice: The budget code is TANGO-7731." in asked
    assert "lunch" not in asked and "deploy" not in asked and "What I know about you" not in asked
    mine = compose(context("how should status updates look?", ["hi"], about_person=about))
    assert "What I know about you:\n- “I prefer short status updates” _(mika" in mine
    # Asked what it knows about them: every fact, though none shares a word with the question.
    for question in ("What do you know about me?", "Tell me about myself", "Who am I?"):
        whole = compose(context(question, ["hi"], recalled_lines=recalled, about_person=about))
        assert "What I know about you:\n- “I prefer short status updates”" in whole, question
        assert "I don't know anything" not in whole and "budget" not in whole
    noted = ["Prefers tea over coffee _(mika, 2026-12-01)_"]  # a model's note: as it is
    tea = compose(context("What do you know about me?", ["hi"], about_person=noted))
    assert "What I know about you:\n- Prefers tea over coffee _(mika, 2026-12-01)_" in tea
    unknown = compose(context("What is the weather like?", ["hi"], recalled_lines=recalled))
    assert "I don't know anything about that yet." in unknown and "From my memory" not in unknown
    again = compose(
        context(
            "What was the budget code?",
            ["hi"],
            recalled_lines=[
                "[2026-12-01 09:30] **Alice** (a DM): The budget code is TANGO-7731. "
                "**aria**: _(answered in offline mode)_",
                "[2026-12-01 09:31] **Alice** (a DM): What was the budget code? "
                "**aria**: _(answered in offline mode)_",
            ],
        )
    )
    assert "The budget code is TANGO-7731.\n" in again  # without the offline placeholder
    asked_before = [
        "[2026-12-01 09:31] **Alice** (a DM): What's the deploy procedure? "
        "**aria**: _(answered in offline mode)_",
        "[2026-11-20 10:00] **How to deploy** 1. run tests 2. tag 3. push",
    ]
    how = compose(context("How do I deploy?", ["hi"], recalled_lines=asked_before))
    assert "From my memory:\n- [2026-11-20 10:00] **How to deploy** 1. run tests" in how
    assert "procedure?" not in how  # a question asked before answers nothing
    assert again.count("What was the budget code?") == 1  # the question, not its echo
    # Said a moment ago in this conversation, before recall has it: the conversation answers.
    quick = compose(context("When do we ship the beta?", ["hi", "We ship the beta on Friday."]))
    assert "Earlier here, you said:\n- “We ship the beta on Friday.”" in quick
    assert "I don't know" not in quick and "“hi”" not in quick
    shown = ["[2026-12-01 09:30] **Alice** (a DM): We ship the beta on Friday."]
    both = compose(
        context("When is the beta?", ["We ship the beta on Friday."], recalled_lines=shown)
    )
    assert both.count("We ship the beta on Friday.") == 1  # recalled already: said once
    told = compose(context("The release is on Friday.", ["hi"], recalled_lines=recalled))
    assert "I don't know" not in told  # not a question: noted, nothing to confess
    assert told.startswith("Noted, Alice: “The release")
    assert asked.startswith("Alice, you asked: “What was the budget code?”")


def test_a_statement_opening_with_an_asking_word_is_noted_not_asked() -> None:
    """Told a procedure, a rule or a reminder, the Anima said it knew nothing about it."""
    for told in (
        "How to deploy: 1. run the tests 2. tag the release 3. push to production",
        "Do not deploy on Fridays, ever.",
        "Which reminds me: the VPN certificate expires on 20 December.",
        "When the build fails, page the on-call engineer.",
    ):
        reply = compose(context(told, ["hi"]))
        assert reply.startswith("Noted, Alice:"), told
        assert "I don't know" not in reply, told
    for asked in ("where is the budget sheet", "How do I deploy", "what is at 10:30"):
        reply = compose(context(asked, ["hi"]))
        assert reply.startswith("Alice, you asked:"), asked
        assert "I don't know anything about that yet." in reply, asked


def test_what_matches_best_leads_and_of_equal_matches_the_latest() -> None:
    """Asked the budget code, a profile fact sharing only "code" went first, the answer
    second and its note again in other words; a value changed later came after the old."""
    about = ["My locker code is 4521 _(aria, 2026-12-01)_"]
    recalled = [
        "[2026-12-01 09:00] Alice: The billing database host is db1.internal.",
        "[2026-12-02 09:00] Alice: The billing database host is db7.internal.",
        "[2026-12-02 10:00] Alice: The budget code for Project Falcon is FAL-7731.",
        "[2026-12-02 11:00] Alice's locker code is 4521.",
    ]
    asked = "What is the budget code for Project Falcon?"
    reply = compose(context(asked, ["hi"], recalled_lines=recalled, about_person=about))
    assert reply.index("FAL-7731") < reply.index("What I know about you"), reply
    assert "Alice's locker code" not in reply  # the profile fact says it already
    host = compose(context("What is the billing database host?", ["hi"], recalled_lines=recalled))
    assert host.index("db7.internal") < host.index("db1.internal"), host
    mine = compose(context("What is my locker code?", ["hi"], about_person=about))
    assert mine.index("What I know about you") < mine.index("4521")


def test_a_small_number_alone_is_no_shared_word() -> None:
    """ "Q3" is tokenised as "q3" and "3", and every numbered list holds a 3."""
    recalled = [
        "[2026-12-01 09:30] **How to deploy** 1. run the tests 2. tag 3. push to production",
        "[2026-12-01 09:40] Alice: The staging server moved to staging2.example.com.",
        "[2026-12-02 10:00] Alice: The Q3 offsite is in Lisbon.",
    ]
    reply = compose(context("Where is the Q3 offsite?", ["hi"], recalled_lines=recalled))
    assert "Lisbon" in reply and "deploy" not in reply and "staging" not in reply
    moved = compose(context("Is staging2 up?", ["hi"], recalled_lines=recalled))
    assert "staging2.example.com" in moved and "deploy" not in moved


def test_an_earlier_question_here_is_no_answer_to_this_one() -> None:
    """A second person asked two things in a row; the first was listed as what they said,
    and hid that nothing is known."""
    earlier = ["Hi, what is the budget code for Project Falcon?"]
    reply = compose(context("What is Maya's locker code?", earlier))
    assert "Earlier here" not in reply and "Falcon" not in reply
    assert "I don't know anything about that yet." in reply


def test_a_long_recalled_line_shows_the_part_that_matches() -> None:
    # A session summary holds the whole conversation: cut at 200 characters, it showed the
    # office door code when asked about tea, and its cut "**Dana Scu…" left the reply bold.
    said = (
        "My office door code is 7720.",
        "My garage door code is 3141.",
        "The deploy key for staging is in the vault.",
        "I had a lovely weekend hiking in the Alps with my sister.",
        "We decided to ship the beta on Friday.",
        "I prefer tea over coffee.",
    )
    head = "[2026-12-06 08:35] **Session summary** (a direct conversation on web, 6 turns)"
    summary = head + "".join(f" **Dana Scully**: {line}" for line in said)
    reply = compose(context("Do I prefer tea or coffee?", ["hi"], recalled_lines=[summary]))
    assert f"From my memory:\n- {head} … **Dana Scully**: I prefer tea over coffee.\n" in reply
    for pad in range(40):  # wherever the cut falls, inside a speaker's bold name or not
        padded = summary.replace("garage", "garage" + " far" * pad)
        office = compose(context("my office door code?", ["hi"], recalled_lines=[padded]))
        shown = next(line for line in office.splitlines() if line.startswith("- [2026"))
        assert "office door code is 7720" in shown and shown.endswith(("…", "…**")), shown
        assert all(line.count("**") % 2 == 0 for line in office.splitlines()), shown


def test_an_offline_answer_says_the_same_words_once() -> None:
    about = ["My dentist appointment is on Tuesday at 3pm _(aria, 2026-12-05, in a DM)_"]
    recalled = [
        "[2026-12-05 20:15] **Alice** (a direct conversation on web): My dentist appointment"
        " is on Tuesday at 3pm.",
        "[2026-12-05 20:16] **Alice** (a direct conversation on web): The dentist moved"
        " to Elm Street.",
    ]
    asked = compose(
        context(
            "When is my dentist appointment?",
            ["hi"],
            recalled_lines=recalled,
            about_person=about,
        )
    )
    assert asked.count("on Tuesday at 3pm") == 1
    assert "What I know about you:\n- “My dentist appointment is on Tuesday at 3pm”" in asked
    assert "From my memory:\n- [2026-12-05 20:16] **Alice**" in asked  # other words stay
    note = "[2026-12-05 20:40] 来週の月曜日に田中さんとミーティングがあります。"  # a kept note
    turn = f"[2026-12-05 20:40] **Alice** (a DM): {note[19:]}"
    both = compose(context("田中さんとのミーティングはいつ？", ["hi"], recalled_lines=[turn, note]))
    assert both.count("ミーティングがあります") == 1 and "**Alice** (a DM)" in both
    turn = "[2026-12-05 20:40] **Alice** (a DM): Reminder: renew the SSL certificate by May 5."
    note = "[2026-12-05 20:40] Renew the SSL certificate by May 5."  # the marker dropped
    renew = compose(
        context("When does the SSL certificate expire?", ["hi"], recalled_lines=[turn, note])
    )
    assert renew.count("SSL certificate by May 5") == 1 and "Reminder: renew" in renew


def test_offline_matching_ignores_when_and_where_a_line_was_said() -> None:
    recalled = [
        "[2026-12-12 09:30] **Priya** (a direct conversation on web): I went hiking.",
        "[2026-12-01 09:30] **Alice** (a direct conversation on web): The garage code is 3141.",
        "[2026-12-01 09:40] **Session summary** (a direct conversation on web, 09:30–09:40 UTC,"
        " 12 turns) **Alice**: The garage code is 3141.",
    ]
    about = ["I prefer short status updates _(mika, 2026-12-12)_"]
    # "12" and "web" are in the lines' time and place, not in what was said.
    told = compose(
        context(
            "The offsite is on 12 March, on the web.",
            ["hi"],
            recalled_lines=recalled,
            about_person=about,
        )
    )
    assert "From my memory" not in told and "What I know about you" not in told
    # Who said it still counts: a question naming Priya asks about her words.
    named = compose(context("What did Priya say?", ["hi"], recalled_lines=recalled))
    assert "From my memory:\n- [2026-12-12 09:30] **Priya**" in named and "garage" not in named


def test_offline_matching_in_japanese_and_chinese_needs_a_shared_word_not_grammar() -> None:
    ja = [
        "[2026-12-04 14:05] **Kenji** (a direct conversation on web): "
        "来週の火曜日にチームで京都へ出張します。",
        "[2026-12-04 14:06] **Kenji** (a direct conversation on web): "
        "私はコーヒーよりお茶が好きです。",
    ]
    # です, どこ and か are in both the question and the tea line: grammar, not a subject.
    asked = compose(context("出張はどこですか？", ["hi"], recalled_lines=ja))
    assert asked.startswith("Alice, you asked: “出張はどこですか？”")
    assert "京都へ出張します" in asked and "お茶" not in asked
    lives = compose(context("私は東京に住んでいます。", ["hi"], recalled_lines=ja))
    assert "From my memory" not in lives  # 私は is grammar too
    polite = compose(context("京都の出張は何曜日ですか。", ["hi"], recalled_lines=ja))
    assert polite.startswith("Alice, you asked:") and "お茶" not in polite
    zh = [
        "[2026-12-04 14:05] **Kenji** (a direct conversation on web): 我们下周去北京出差。",
        "[2026-12-04 14:06] **Kenji** (a direct conversation on web): 我们喜欢喝茶。",
    ]
    where = compose(context("我们去哪里出差？", ["hi"], recalled_lines=zh))
    assert "北京出差" in where and "喝茶" not in where
    nothing = compose(context("我们看过什么电影吗", ["hi"], recalled_lines=zh))
    assert "I don't know anything about that yet." in nothing


def test_model_errors_are_classified_for_retry() -> None:
    assert classify(429, RuntimeError("slow down")).retryable
    assert classify(503, RuntimeError("busy")).retryable
    assert not classify(401, RuntimeError("bad key")).retryable
    assert not classify(400, RuntimeError("bad request")).retryable


def test_one_process_per_data_root(tmp_path: Path) -> None:
    assert running_hub(tmp_path) is None
    with hold_data_root(tmp_path, "http://127.0.0.1:18555"):
        found = running_hub(tmp_path)
        assert found is not None and found.url == "http://127.0.0.1:18555"
        with pytest.raises(HubBusy), hold_data_root(tmp_path):
            pass
    assert running_hub(tmp_path) is None
    assert not (tmp_path / "hub.json").exists()


def test_adapters_are_found_by_entry_point_name() -> None:
    from hub.adapter import discover

    found = discover()
    assert "web" in found
    assert discover(["web"]).keys() == {"web"}
    with pytest.raises(LookupError, match="nope"):
        discover(["web", "nope"])


async def test_a_model_litellm_cannot_price_is_registered_free_once() -> None:
    import litellm

    from hub.model.client import LiteLLMCalls

    unknown = "openai/animahub-test-unpriced-model"
    assert unknown not in litellm.model_cost
    calls = LiteLLMCalls()
    hello = [{"role": "user", "content": "hi"}]
    assert await calls.complete(hello, {"model": unknown, "mock_response": "ok"}) == "ok"
    assert litellm.get_model_info(unknown)["input_cost_per_token"] == 0.0
    known = litellm.model_cost["gpt-4o-mini"]["input_cost_per_token"]
    await calls.complete(hello, {"model": "openai/gpt-4o-mini", "mock_response": "ok"})
    assert litellm.model_cost["gpt-4o-mini"]["input_cost_per_token"] == known > 0


def test_one_hub_per_database(database_url: str) -> None:
    """Two data roots naming one database: the second hub is refused with a clear error."""
    busy = pytest.raises(HubBusy, match="another AnimaHub process is using the database")
    with hold_database(database_url), busy, hold_database(database_url):
        pass
    with hold_database(database_url):  # released when the first hub stopped
        pass
    # An in-memory database belongs to its process anyway.
    with hold_database("sqlite://"), hold_database("sqlite://"):
        pass


def test_the_anima_addressed_by_name_is_no_match() -> None:
    # "aria, …" addresses aria; every reply she gave carries her name, so it matched them all.
    recalled = [
        "[2026-12-06 16:54] **Alice** (a direct conversation on web): have kai check the flaky"
        " build **aria**: Done: task 1 for kai.",
        "[2026-12-06 16:55] **Alice** (a direct conversation on web): the vector database"
        " shortlist is qdrant and pgvector",
    ]
    reply = compose(
        context("aria, have kai research vector databases", ["hi"], recalled_lines=recalled)
    )
    assert "vector database shortlist" in reply
    assert "flaky" in reply  # it names kai, as the message does
    unrelated = compose(context("aria, summarise the budget", ["hi"], recalled_lines=recalled))
    assert "From my memory" not in unrelated, unrelated
