"""Tests for hub.delivery.chunking.split_text: limits, fence handling, round trip, split
preferences."""

from __future__ import annotations

import random
import re

import pytest

from hub.delivery.chunking import split_text

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*$", re.MULTILINE)


def _fence_open_after(text: str, end: int) -> bool:
    """Whether a fence is open at `end` (the test documents never nest fence kinds)."""
    return len(FENCE_LINE.findall(text[:end])) % 2 == 1


def _last_fence_line(text: str, end: int) -> re.Match[str]:
    lines = [m for m in FENCE_LINE.finditer(text) if m.start() < end]
    assert lines, "expected a fence line before this point"
    return lines[-1]


def _match_at(text: str, cursor: int, body: str) -> int | None:
    """End of `body` in `text` if it follows `cursor` with only whitespace between."""
    index = text.find(body, cursor)
    if index < 0 or text[cursor:index].strip():
        return None
    return index + len(body)


def _assert_round_trip(text: str, chunks: list[str]) -> None:
    cursor = 0
    for number, chunk in enumerate(chunks):
        body = chunk
        if number > 0 and _fence_open_after(text, cursor):
            opener = _last_fence_line(text, cursor)[0].rstrip()
            assert body.startswith(opener + "\n"), f"chunk {number} does not reopen {opener!r}"
            body = body[len(opener) + 1 :]
        is_last = number == len(chunks) - 1
        end = _match_at(text, cursor, body)
        if end is None or (not is_last and _fence_open_after(text, end)):
            marker = _last_fence_line(text, cursor + len(body))[1]
            assert body.endswith("\n" + marker), f"chunk {number} does not close its fence"
            body = body[: -len(marker) - 1]
            end = _match_at(text, cursor, body)
            assert end is not None, f"chunk {number} is not the next part of the text"
            assert _fence_open_after(text, end), f"chunk {number} closes a fence that was not open"
        cursor = end
    assert not text[cursor:].strip(), "text left over after the last chunk"


def _assert_invariants(text: str, chunks: list[str], limit: int) -> None:
    assert chunks
    for chunk in chunks:
        assert len(chunk) <= limit
        assert chunk.strip()
        assert len(FENCE_LINE.findall(chunk)) % 2 == 0, f"unbalanced fences in {chunk!r}"
    _assert_round_trip(text, chunks)


def _prose(rng: random.Random, sentences: int) -> str:
    words = ["hub", "anima", "memory", "channel", "reply", "token", "schedule", "thread", "note"]
    out = []
    for _ in range(sentences):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        out.append(sentence.capitalize() + rng.choice([".", "!", "?"]))
    return " ".join(out)


def _python_code(rng: random.Random, size: int) -> str:
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        name = f"func_{len(lines)}"
        lines += [f"def {name}(x: int) -> int:", f"    return x * {rng.randint(1, 99)}", ""]
    return "\n".join(lines).rstrip()


def _reply_with_code() -> str:
    rng = random.Random(7)
    before = "\n\n".join(_prose(rng, 6) for _ in range(6))
    code = "```python\n" + _python_code(rng, 3000) + "\n```"
    text = f"{before}\n\n{code}"
    while len(text) < 10_000:
        text += "\n\n" + _prose(rng, 6)
    return text[:10_000]


@pytest.mark.parametrize("limit", [2000, 3900])
def test_long_reply_with_python_fence(limit: int) -> None:
    text = _reply_with_code()
    fence = re.search(r"```python\n.*?\n```", text, re.DOTALL)
    assert len(text) == 10_000
    assert fence is not None
    assert 2_900 <= len(fence[0]) <= 3_200
    chunks = split_text(text, limit)
    assert len(chunks) >= 3
    _assert_invariants(text, chunks, limit)
    for chunk in chunks:
        for line in re.findall(r"^```.*$", chunk, re.MULTILINE):
            assert line in ("```python", "```")
    if limit == 2000:  # the fence is longer than a chunk, so it must have been reopened
        assert any(chunk.startswith("```python\n") for chunk in chunks[1:])


def test_cjk_paragraph_without_spaces_splits_at_sentence_marks() -> None:
    text = "".join(f"これは{i}番目の文です、スペースはありません。" for i in range(200))
    chunks = split_text(text, 100)
    assert "".join(chunks) == text
    assert all(len(chunk) <= 100 for chunk in chunks)
    assert all(chunk.endswith("。") for chunk in chunks)


def test_cjk_without_any_marks_is_hard_cut_full() -> None:
    text = "漢字仮名交じり文" * 100
    chunks = split_text(text, 64)
    assert "".join(chunks) == text
    assert [len(chunk) for chunk in chunks[:-1]] == [64] * (len(chunks) - 1)


def test_single_long_word_is_hard_cut() -> None:
    word = "".join(random.Random(3).choice("abcdefghij") for _ in range(5000))
    chunks = split_text(word, 2000)
    assert chunks == [word[:2000], word[2000:4000], word[4000:]]


def test_paragraph_boundary_preferred_over_line() -> None:
    first = "Alpha line one.\nAlpha line two."
    second = "\n".join(f"Beta line number {i:02d} here." for i in range(3))
    chunks = split_text(f"{first}\n\n{second}", 100)
    assert chunks == [first, second]


def test_line_boundary_preferred_over_sentence() -> None:
    first = "Short first line."
    second = " ".join(f"Sentence {i} goes here." for i in range(8))
    chunks = split_text(f"{first}\n{second}", 100)
    assert chunks[0] == first
    assert chunks[1].endswith(".")


def test_sentence_boundary_preferred_over_whitespace() -> None:
    sentences = [f"Word word word wor{i}." for i in range(10)]
    chunks = split_text(" ".join(sentences), 100)
    assert chunks[0] == " ".join(sentences[:4])  # 83 chars; a fifth sentence would not fit
    assert chunks[1].startswith(sentences[4])


def test_whitespace_preferred_over_hard_cut() -> None:
    words = [f"word{i:04d}" for i in range(30)]
    chunks = split_text(" ".join(words), 64)
    assert chunks[0] == " ".join(words[:7])  # 7 * 9 - 1 = 62 characters
    assert all(chunk.split(" ")[-1] in words for chunk in chunks)


def test_short_text_is_unchanged() -> None:
    text = "  Hello there.\n\n```python\nprint('hi')\n```\n  "
    assert split_text(text, 64) == [text]


def test_blank_text_gives_no_chunks() -> None:
    assert split_text("", 100) == []
    assert split_text(" \n\n  \n" * 50, 100) == []


@pytest.mark.parametrize("limit", [0, 10, 63])
def test_limit_too_small_raises(limit: int) -> None:
    with pytest.raises(ValueError):
        split_text("hello", limit)


def _random_block(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.45:
        return _prose(rng, rng.randint(1, 8))
    if kind < 0.6:
        return "\n".join(f"- {_prose(rng, 1)}" for _ in range(rng.randint(1, 6)))
    if kind < 0.7:
        return "".join(rng.choice("日本語の文章。テスト！") for _ in range(rng.randint(10, 400)))
    if kind < 0.75:
        return "".join(rng.choice("xyz") for _ in range(rng.randint(50, 600)))
    fence = rng.choice(["```", "```python", "```js title", "~~~", "~~~sh"])
    code = _python_code(rng, rng.randint(10, 900))
    if rng.random() < 0.3:
        code = code.replace("\n\n", "\n\n\n    \n")
    return f"{fence}\n{code}\n{fence[:3]}"


@pytest.mark.parametrize("seed", range(200))
def test_random_documents_keep_invariants(seed: int) -> None:
    rng = random.Random(seed)
    separators = ["\n\n", "\n", "\n\n\n", "\n  \n"]
    text = ""
    for _ in range(rng.randint(1, 12)):
        text += _random_block(rng) + rng.choice(separators)
    limit = rng.randint(64, 500)
    chunks = split_text(text, limit)
    if len(text) <= limit:
        assert chunks == [text]
    else:
        _assert_invariants(text, chunks, limit)
