"""CommonMark into Telegram HTML: what Telegram's parser (the fake's, as strict) accepts,
hostile input shown as written, and chunks of the hub's chunker that stay balanced."""

from __future__ import annotations

import pytest

from adapters.telegram.render import balance, split_balanced, to_html, to_plain
from animahub_kit.fakes.telegram_html import EntityError, parse
from hub.delivery.chunking import split_text


def visible(markdown: str) -> str:
    return parse(to_html(markdown)).text


def types(markdown: str) -> list[str]:
    return [e["type"] for e in parse(to_html(markdown)).entities]


def test_formatting_becomes_the_tags_telegram_takes() -> None:
    html = to_html("# Title\n\n**bold** *it* ~~gone~~ `x<y` [site](https://example.com/?a=1&b=2)")
    assert html == (
        "<b>Title</b>\n\n<b>bold</b> <i>it</i> <s>gone</s> <code>x&lt;y</code> "
        '<a href="https://example.com/?a=1&amp;b=2">site</a>'
    )
    assert parse(html).text == "Title\n\nbold it gone x<y site"


def test_fenced_code_keeps_its_language_and_blank_lines() -> None:
    html = to_html("```python\ndef f():\n\n    return 1 < 2\n```")
    parsed = parse(html)
    assert parsed.text == "def f():\n\n    return 1 < 2"
    assert parsed.entities == [
        {"type": "pre", "offset": 0, "length": len(parsed.text), "language": "python"}
    ]
    assert "\n\n" not in html  # a blank line inside code is never a chunk boundary


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<b>not bold</b> & <i",
        "a &amp; b &lt; &#x41; &unknown;",
        '<a href="javascript:alert(1)">x</a>',
        "[click](javascript:alert(1)) [data](data:text/html,hi)",
        "**unclosed *nesting ~~mess",
        "``` <pre>\n</code></pre><b>\n```",
        "> > > deep\n> > quote\n\n> ```\n> code\n> ```",
        "</b></i></a></pre>",
        "\x00\u202e reversed \ufeff",
    ],
)
def test_hostile_input_is_shown_as_written_and_always_parses(hostile: str) -> None:
    parsed = parse(to_html(hostile))  # raises EntityError if Telegram would refuse it
    assert all(e.get("url", "https:").startswith(("https:", "http:")) for e in parsed.entities)
    for fragment in ("<script>", "</b>", "&unknown;", "</pre>"):
        if fragment in hostile and "`" not in hostile:
            assert fragment in parsed.text


def test_links_only_where_markdown_it_allows_them() -> None:
    assert types("[click](javascript:alert(1))") == []
    assert visible("[click](javascript:alert(1))") == "[click](javascript:alert(1))"
    assert types("[ok](https://example.com)") == ["text_link"]


def test_blockquotes_are_not_nested_and_code_in_a_link_is_text() -> None:
    assert types("> a\n> > b") == ["blockquote"]
    assert types("[`code`](https://example.com)") == ["text_link"]


def test_lists_and_rules_are_lines_of_text() -> None:
    assert visible("- a\n- b\n  1. c\n\n---") == "• a\n• b\n  1. c\n\n" + "─" * 12


def test_no_line_looks_like_a_fence_to_the_chunker() -> None:
    html = to_html("```\n```inner\n~~~\n```")
    assert not any(line.lstrip(" ").startswith(("```", "~~~")) for line in html.split("\n"))
    assert parse(html).text == "```inner\n~~~"


@pytest.mark.parametrize(
    "markdown",
    [
        "**" + "bold words " * 900 + "end**",  # one inline span over two messages
        "```py\n" + "\n".join(f"x = {i} < {i + 1} & y" for i in range(900)) + "\n```",
        "> " + "quoted " * 1500,
        "&<" * 6000,  # entities are never cut
        "[" + "link " * 2000 + "](https://example.com/" + "p" * 1500 + ")",
        "word" * 3000,  # nowhere to cut but inside the word
    ],
)
def test_every_chunk_of_a_long_reply_is_balanced_html_within_the_limit(markdown: str) -> None:
    html = to_html(markdown)
    chunks = split_text(html, 4096)
    assert len(chunks) > 1
    texts = []
    for chunk in chunks:
        assert len(chunk) <= 4096
        texts.append(parse(chunk).text)  # every chunk parses on its own
    joined = "".join(texts).replace("\n", "").replace(" ", "")
    assert joined == parse(html).text.replace("\n", "").replace(" ", "")


def test_split_balanced_reopens_what_was_open() -> None:
    pieces = split_balanced("<b>" + "a " * 100 + "</b>", 64)
    assert all(p.startswith("<b>") and p.endswith("</b>") for p in pieces)


def test_balance_repairs_a_prefix_cut_anywhere() -> None:
    html = to_html("**bold [link](https://example.com) `code` more** and &<")
    for cut in range(len(html) + 1):
        parse(balance(html[:cut]))  # never raises
    assert balance('<b>x <a href="https://e') == "<b>x </b>"
    assert balance("a &am") == "a "


def test_plain_text_is_what_the_html_shows() -> None:
    html = to_html("**a** & <b> `c`\n\n```\nx\n\ny\n```")
    assert to_plain(html) == parse(html).text == "a & <b> c\n\nx\n\ny"


def test_the_fake_refuses_what_telegram_refuses() -> None:
    for bad in ("<b>x", "<div>x</div>", "a & b", "<b><i>x</b></i>", "<code><b>x</b></code>"):
        with pytest.raises(EntityError):
            parse(bad)
