"""How the CLI draws a reply while it streams in (`hub/cli/console.py`, `hub/memory/excerpt.py`)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncGenerator

import pytest
from rich.console import Console

from hub.cli import console as cli_console
from hub.memory.excerpt import closed, excerpt
from hub.memory.lexical import tokenize


def test_a_reply_cut_off_mid_stream_is_drawn_with_its_spans_closed() -> None:
    assert closed("Hello. **No language model") == "Hello. **No language model**"
    assert closed("Set `model") == "Set `model`"
    assert closed("**Set `model") == "**Set `model`**"  # the inner span closes first
    assert closed("Set `a` and **b") == "Set `a` and **b**"
    assert closed("```python\nx = 1") == "```python\nx = 1\n```"
    assert closed("**No language model is ") == "**No language model is** "  # then a space
    assert closed("Hello **") == "Hello "  # nothing bold yet
    assert closed("aria: _(answered in offline mod…") == "aria: _(answered in offline mod…_"
    assert closed("_(answered in offline mode)_ and API_KEY_2") == (
        "_(answered in offline mode)_ and API_KEY_2"
    )  # an underscore inside a word is no span
    assert closed("say _") == "say "
    done = "**No model** is set: set `model`."
    assert closed(done) == done


class _ClosedPipe(io.StringIO):
    """A pipe whose reader has gone (`| head -1` after its line): every write after the
    first fails."""

    def write(self, text: str) -> int:
        if self.getvalue():
            raise BrokenPipeError
        return super().write(text)


class _PipeConsole(Console):
    def on_broken_pipe(self) -> None:  # rich's own also points fd 1 at /dev/null
        raise SystemExit(1)


def test_a_closed_pipe_closes_the_reply_stream_in_its_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Left to the garbage collector, the stream closed outside its task and printed two
    'error occurred during closing of asynchronous generator' tracebacks."""
    monkeypatch.setattr(cli_console, "console", _PipeConsole(file=_ClosedPipe()))
    finished: list[str] = []

    async def pieces() -> AsyncGenerator[str, None]:
        try:
            for n in range(5):
                yield f"line {n}\n"
        finally:
            finished.append("closed")

    async def show() -> None:
        stream = pieces()
        with pytest.raises(SystemExit):
            await cli_console.show_reply(stream)
        assert finished == ["closed"]  # before the stream is garbage

    asyncio.run(show())


def test_an_excerpt_finds_the_matching_sentence_of_cjk_text_written_without_spaces() -> None:
    """A long line shows the sentence that matches from its start; Japanese sentences follow
    one another with no space after 「。」."""
    plan = "来週の月曜日に大阪へ出張します。"
    line = "**Dana**: " + "今日は雨でした。" * 12 + plan + "以上です。"
    shown = excerpt(line, set(tokenize("大阪")), 60)
    assert shown.startswith("**Dana**: … 来週の月曜日に大阪へ出張"), shown
    assert len(shown) <= 60
