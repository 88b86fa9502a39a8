"""CommonMark into the plain text a LINE message shows, and how long replies are cut."""

from __future__ import annotations

from adapters.line import LineAdapter
from adapters.line.render import to_plain
from hub.delivery.chunking import split_text


def test_markers_are_dropped_and_structure_is_kept_in_the_text() -> None:
    markdown = (
        "# Plan\n\nSome **bold**, *em* and `code`.\n\n"
        "- one\n- two\n  - nested\n\n3. third\n4. fourth\n\n> quoted\n\n---\n"
    )
    assert to_plain(markdown) == (
        "Plan\n\nSome bold, em and code.\n\n"
        "• one\n• two\n  • nested\n\n3. third\n4. fourth\n\n> quoted\n\n――――――――"
    )


def test_links_show_their_url_and_code_blocks_stay_verbatim() -> None:
    markdown = (
        "See [the docs](https://example.com/docs), <https://example.com> and "
        "![a chart](https://example.com/c.png).\n\n"
        "```python\ndef f():\n    return 1\n```\n"
    )
    assert to_plain(markdown) == (
        "See the docs (https://example.com/docs), https://example.com and "
        "a chart (https://example.com/c.png).\n\n"
        "def f():\n    return 1"
    )


def test_tables_become_rows_and_nothing_is_escaped() -> None:
    assert to_plain("| a | b |\n|---|---|\n| 1 | <2> |\n") == "a | b\n1 | <2>"
    assert to_plain("@channel & <b>x</b>") == "@channel & <b>x</b>"
    assert to_plain("  \n") == ""


def test_a_long_reply_is_cut_into_messages_of_at_most_5000_characters() -> None:
    capabilities = LineAdapter.capabilities
    assert (capabilities.max_text, capabilities.batch) == (5000, 5)
    assert not (capabilities.edits or capabilities.threads)
    text = to_plain("\n\n".join(f"Part {i}. " + "word " * 600 for i in range(12)))
    chunks = split_text(text, capabilities.max_text)
    assert all(len(chunk) <= 5000 for chunk in chunks)
    assert "".join(chunks).replace("\n", "") == text.replace("\n", "")
