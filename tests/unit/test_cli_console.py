"""How the CLI draws a reply while it streams in (`hub/cli_console.py`)."""

from __future__ import annotations

from hub.cli_console import closed


def test_a_reply_cut_off_mid_stream_is_drawn_with_its_spans_closed() -> None:
    assert closed("Hello. **No language model") == "Hello. **No language model**"
    assert closed("Set `model") == "Set `model`"
    assert closed("**Set `model") == "**Set `model`**"  # the inner span closes first
    assert closed("Set `a` and **b") == "Set `a` and **b**"
    assert closed("```python\nx = 1") == "```python\nx = 1\n```"
    assert closed("**No language model is ") == "**No language model is** "  # then a space
    assert closed("Hello **") == "Hello "  # nothing bold yet
    done = "**No model** is set: set `model`."
    assert closed(done) == done
