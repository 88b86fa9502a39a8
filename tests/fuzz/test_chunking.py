"""split_text over any text and limit: every chunk fits, and the chunks are the input in order,
with only the whitespace at each cut dropped and the fence lines a cut closes and reopens
added (hub/delivery/chunking.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hub.delivery.chunking import MIN_LIMIT, split_text
from tests.fuzz.strategies import examples, nasty_text

# Markdown made of the pieces a cut has to respect: fences (closed, unclosed, nested kinds,
# long markers, info strings), blank lines, long words, sentences, indentation.
_PIECES = st.one_of(
    nasty_text(30),
    st.sampled_from(
        [
            "```",
            "```python",
            "~~~",
            "````",
            "  ```js title=x",
            "```a`b",
            "`" * 40,
            "\n",
            "\n\n",
            "\n   \n",
            ". ",
            "。",
            "    indented",
            "- item",
            "word " * 30,
            "x" * 150,
        ]
    ),
)
markdown = st.lists(_PIECES, max_size=40).map("\n".join)


@dataclass(frozen=True)
class _Fence:
    opened: int  # end of the opening line
    closed: int  # start of the closing line (len(text) when never closed)
    reopen: str
    close: str


def _fences(text: str, limit: int) -> list[_Fence]:
    """The top-level fenced blocks as CommonMark reads them, except that a marker longer
    than a quarter of the limit opens nothing (the module's documented choice)."""
    found: list[_Fence] = []
    opened: tuple[int, str, str] | None = None  # end of the opening line, line, marker
    start = 0
    for line in text.split("\n"):
        if opened is None:
            match = re.fullmatch(r" {0,3}(`{3,}|~{3,})(.*)", line)
            backtick_info = match is not None and match[1][0] == "`" and "`" in match[2]
            if match and len(match[1]) <= limit // 4 and not backtick_info:
                opened = (start + len(line), line.rstrip(), match[1])
        elif re.fullmatch(rf" {{0,3}}{re.escape(opened[2])}{re.escape(opened[2][0])}*\s*", line):
            found.append(_fence(opened, start, limit))
            opened = None
        start += len(line) + 1
    if opened is not None:
        found.append(_fence(opened, len(text), limit))
    return found


def _fence(opened: tuple[int, str, str], closed: int, limit: int) -> _Fence:
    end, line, marker = opened
    return _Fence(end, closed, line if len(line) <= limit // 4 else marker, marker)


def _inside(fences: list[_Fence], pos: int) -> _Fence | None:
    return next((f for f in fences if f.opened < pos < f.closed), None)


def _reading(text: str, fences: list[_Fence], cursor: int, chunk: str, last: bool) -> int | None:
    """The end of the text `chunk` holds when it is the text after `cursor` (whitespace at
    the cut skipped), preceded by the line reopening the fence open there and followed by
    the marker closing the fence open at its end (the last chunk leaves an unclosed fence
    as the text does); None if it is not."""
    first = cursor
    while first < len(text) and text[first].isspace():
        first += 1
    for start in range(cursor, first + 1):
        fence = _inside(fences, start)
        head = fence.reopen + "\n" if fence else ""
        if not chunk.startswith(head):
            continue
        body = chunk[len(head) :]
        for core in (
            body,
            body.rpartition("\n")[0],
        ):  # the chunk's own text, or it and a closing marker
            end = start + len(core)
            closing = None if last else _inside(fences, end)
            tail = "\n" + closing.close if closing else ""
            if core.strip() and text.startswith(core, start) and body == core + tail:
                return end
    return None


def assert_split(text: str, limit: int) -> None:
    chunks = split_text(text, limit)
    if not text.strip():
        assert chunks == []
        return
    fences = _fences(text, limit)
    cursor = 0
    for number, chunk in enumerate(chunks):
        assert len(chunk) <= limit, f"chunk {number} has {len(chunk)} characters"
        end = _reading(text, fences, cursor, chunk, number == len(chunks) - 1)
        assert end is not None, f"chunk {number} {chunk[:80]!r} is not the text at {cursor}"
        cursor = end
    assert not text[cursor:].strip(), f"text lost after the last chunk: {text[cursor:][:80]!r}"


@examples(ci=150, full=20_000)
@given(markdown, st.integers(min_value=MIN_LIMIT, max_value=400))
def test_chunks_fit_and_keep_the_text_in_order(text: str, limit: int) -> None:
    assert_split(text, limit)


@examples(ci=100, full=5_000)
@given(st.text(max_size=3000), st.integers(min_value=MIN_LIMIT, max_value=5000))
def test_any_text_splits(text: str, limit: int) -> None:
    assert_split(text, limit)


@given(st.text(max_size=50), st.integers(max_value=MIN_LIMIT - 1))
def test_a_limit_below_the_minimum_is_a_value_error(text: str, limit: int) -> None:
    with pytest.raises(ValueError, match="limit must be at least"):
        split_text(text, limit)
