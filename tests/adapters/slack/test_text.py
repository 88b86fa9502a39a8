"""Text both ways: CommonMark -> mrkdwn for replies, Slack markup -> CommonMark for messages."""

from __future__ import annotations

import re

from adapters.slack.normalize import Bot, Bots, to_commonmark
from adapters.slack.render import to_mrkdwn
from hub.delivery.chunking import split_text


def test_bold_italic_strike_and_links_become_mrkdwn() -> None:
    rendered = to_mrkdwn("**Bold**, *italic*, ~~gone~~ and [the docs](https://example.com/x?a=1)")
    assert rendered == "*Bold*, _italic_, ~gone~ and <https://example.com/x?a=1|the docs>"


def test_code_survives_and_is_escaped_for_slack() -> None:
    rendered = to_mrkdwn("Run `a<b`:\n\n```python\nif a < b and c > d:\n    x = a & b\n```\n")
    assert rendered == "Run `a&lt;b`:\n\n```\nif a &lt; b and c &gt; d:\n    x = a &amp; b\n```"


def test_prose_is_escaped_people_are_kept_broadcasts_are_not() -> None:
    rendered = to_mrkdwn("Fish & chips <3 for <@U0ALICE>, not <!channel> or <!here>")
    assert rendered == (
        "Fish &amp; chips &lt;3 for <@U0ALICE>, not &lt;!channel&gt; or &lt;!here&gt;"
    )


def test_lists_and_headings() -> None:
    assert to_mrkdwn("# Plan\n\n- one\n- two") == "*Plan*\n\n•   one\n•   two"
    assert to_mrkdwn("   ") == ""


def test_a_long_rendered_code_block_splits_into_balanced_chunks() -> None:
    code = "\n".join(f"value_{i} = {i} < {i + 1}" for i in range(600))
    rendered = to_mrkdwn(f"Intro.\n\n```\n{code}\n```\n\nOutro.")
    chunks = split_text(rendered, 3900)
    assert len(chunks) >= 4
    for chunk in chunks:
        assert len(chunk) <= 3900
        assert len(re.findall(r"^```", chunk, flags=re.MULTILINE)) % 2 == 0
    lines = [line for c in chunks for line in c.splitlines() if line.startswith("value_")]
    assert lines == [f"value_{i} = {i} &lt; {i + 1}" for i in range(600)]


BOTS = Bots()
BOTS.add(Bot("U0BOT", "B0BOT"))
BOTS.add(Bot("U0KAI", "B0KAI", "kai"))


def test_the_shared_bot_mention_is_dropped_and_an_animas_bot_named() -> None:
    converted = to_commonmark(
        "<@U0BOT>   hello <@U0KAI|kai>, meet <@U0BOB>", {"U0BOB": "Bob"}, BOTS
    )
    assert converted.text == "hello @kai, meet @Bob"
    assert converted.animas == ("kai",)
    assert converted.bot_mentioned


def test_markup_and_entities() -> None:
    converted = to_commonmark(
        "see <https://x.io/?a=1&amp;b=2|docs &amp; more>, <mailto:a@b.io|a@b.io>, "
        "<#C1|general>, <!here>, <!subteam^S1|@devs>, <!date^1392734382^{date}|Feb 18> "
        "and a &lt;tag&gt; &amp;amp; <@U9>",
        {},
        BOTS,
    )
    assert converted.text == (
        "see [docs & more](https://x.io/?a=1&b=2), [a@b.io](mailto:a@b.io), #general, @here, "
        "@devs, Feb 18 and a <tag> &amp; @U9"
    )
    assert converted.animas == () and not converted.bot_mentioned


def test_a_mention_in_the_middle_leaves_one_space() -> None:
    assert to_commonmark("ping <@U0BOT> now", {}, BOTS).text == "ping now"
