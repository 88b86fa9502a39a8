"""The markdown renderers (adapters/*/render.py) over any text: they never raise, they keep
every word, and Telegram's HTML is always HTML Telegram accepts, whole and chunked."""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.discord.render import render as to_discord
from adapters.line.render import to_plain as to_line
from adapters.slack.render import to_mrkdwn
from adapters.telegram.render import balance, split_balanced, to_html
from adapters.telegram.render import to_plain as telegram_text
from animahub_kit.fakes.telegram_html import parse
from hub.delivery.chunking import MIN_LIMIT, split_text
from tests.fuzz.strategies import examples, nasty_text

_WORD = re.compile(r"[^\W_]+")  # letters and digits: `_` is markup
word = st.text(st.characters(categories=("L", "Nd")), min_size=1, max_size=10)
# In a URL: ASCII, so that percent-encoding does not hide it.
path = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)


def _inline(words: list[str]) -> st.SearchStrategy[str]:
    """One inline construct around a word."""
    w = st.sampled_from(words)
    p = st.sampled_from([word for word in words if word.isascii()] or ["x"])
    return st.one_of(
        w,
        w.map("**{}**".format),
        w.map("*{}*".format),
        w.map("~~{}~~".format),
        w.map("`{}`".format),
        st.tuples(w, p).map(lambda t: f"[{t[0]}](https://example.com/{t[1]})"),
        st.tuples(w, p).map(lambda t: f"![{t[0]}](https://example.com/{t[1]}.png)"),
        p.map("<https://example.com/{}>".format),
        w.map("a&b {} <tag> 1<2".format),
    )


_BLOCKS = (
    "{}",
    "# {}",
    "#### {}",
    "- {}",
    "  - {}",
    "3. {}",
    "> {}",
    "> > {}",
    "```python\n{}\n```",
    "~~~\n{}",
    "    {}",
    "| {} | x |\n|---|---|\n| y | z |",
    "{}\n\n---",
)


@st.composite
def document(draw: st.DrawFn) -> tuple[str, list[str]]:
    """Markdown made of words in constructs, and the words it holds."""
    words = draw(st.lists(word, min_size=1, max_size=12))
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        line = " ".join(draw(st.lists(_inline(words), min_size=1, max_size=5)))
        lines.append(draw(st.sampled_from(_BLOCKS)).format(line))
        lines.append(draw(st.sampled_from(["\n", "\n\n"])))
    text = "".join(lines)
    # What is text: not the URLs' fixed part, a fence's info string (not shown) or the
    # number of a list item (renumbered).
    shown = text.replace("https://example.com/", " ").replace("```python", "```")
    shown = re.sub(r"(?m)^3\. ", "", shown)
    return text, _WORD.findall(shown)


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(html.unescape(text)))


RENDERERS: dict[str, Callable[[str], str]] = {
    "slack": to_mrkdwn,
    "discord": to_discord,
    "telegram": to_html,
    "line": to_line,
}


@pytest.mark.parametrize("platform", RENDERERS)
@examples(ci=40, full=3_000)
@given(doc=document())
def test_renderers_keep_every_word(platform: str, doc: tuple[str, list[str]]) -> None:
    markdown, words = doc
    rendered = _words(RENDERERS[platform](markdown))
    missing = Counter(words) - rendered
    assert not missing, f"{platform} lost {sorted(missing)}"


any_text = st.one_of(nasty_text(200), st.text(max_size=2000), document().map(lambda d: d[0]))


@pytest.mark.parametrize("platform", RENDERERS)
@examples(ci=40, full=3_000)
@given(text=any_text)
def test_renderers_never_raise(platform: str, text: str) -> None:
    assert isinstance(RENDERERS[platform](text), str)


@examples(ci=60, full=5_000)
@given(text=any_text, limit=st.integers(min_value=MIN_LIMIT, max_value=600))
def test_telegram_html_is_accepted_whole_and_in_chunks(text: str, limit: int) -> None:
    rendered = to_html(text, limit)
    parse(rendered)  # raises EntityError where Telegram would refuse the message
    visible = re.sub(r"\s", "", telegram_text(rendered))
    assert visible == re.sub(r"\s", "", telegram_text(to_html(text))), "split lost text"
    for chunk in split_text(rendered, limit):
        parse(chunk)
        assert len(chunk) <= limit


@examples(ci=60, full=5_000)
@given(source=st.text(max_size=300), limit=st.integers(min_value=MIN_LIMIT, max_value=300))
def test_telegram_helpers_take_any_string(source: str, limit: int) -> None:
    """balance() repairs a streamed prefix, split_balanced() cuts blocks: any input is
    text to them, never a reason to raise."""
    for piece in split_balanced(to_html(source) or "x", limit):
        assert len(piece) <= limit
    parse(balance(to_html(source)[:limit]))
    telegram_text(balance(source))
