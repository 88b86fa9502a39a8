"""CommonMark (what Animas write) into the plain text a LINE text message shows.

LINE shows no markup at all, so markers are dropped and structure is kept in the text
itself: headings and paragraphs as lines with a blank line between, bullets as `• `, ordered
items numbered, nested lists indented, quotes prefixed `> `, code blocks verbatim (indentation
kept) without their fences, inline code as its text, links as `text (url)` (only the URL
when the text is the URL), images as `alt (url)`, tables as `a | b` rows.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

_MD = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_RULE = "――――――――"


def to_plain(markdown: str) -> str:
    """Render CommonMark as readable plain text; no trailing newline."""
    if not markdown.strip():
        return ""
    tree = SyntaxTreeNode(_MD.parse(markdown))
    return _blocks(tree.children).strip("\n")


def _blocks(nodes: list[SyntaxTreeNode], tight: bool = False) -> str:
    parts = [_block(node) for node in nodes]
    return ("\n" if tight else "\n\n").join(part for part in parts if part != "")


def _block(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("paragraph", "heading"):
        return "".join(_inline(child) for child in node.children)
    if kind in ("fence", "code_block"):
        return node.content.rstrip("\n")
    if kind == "html_block":
        return node.content.rstrip("\n")
    if kind == "hr":
        return _RULE
    if kind == "blockquote":
        inner = _blocks(node.children)
        return "\n".join(f"> {line}" if line else ">" for line in inner.split("\n"))
    if kind in ("bullet_list", "ordered_list"):
        return _list(node)
    if kind == "table":
        return _table(node)
    if kind == "inline":
        return _inline(node)
    return _blocks(node.children)


def _list(node: SyntaxTreeNode) -> str:
    start = int(node.attrs.get("start", 1) or 1) if node.type == "ordered_list" else 0
    lines: list[str] = []
    for offset, item in enumerate(node.children):
        marker = f"{start + offset}." if node.type == "ordered_list" else "•"
        tight = all(child.hidden for child in item.children if child.type == "paragraph")
        body = _blocks(item.children, tight=tight).split("\n")
        pad = " " * (len(marker) + 1)
        lines.append(f"{marker} {body[0]}".rstrip())
        lines.extend(f"{pad}{line}" if line else "" for line in body[1:])
    return "\n".join(lines)


def _table(node: SyntaxTreeNode) -> str:
    rows = []
    for section in node.children:  # thead, tbody
        for row in section.children:
            cells = ["".join(_inline(c) for c in cell.children) for cell in row.children]
            rows.append(" | ".join(cell.strip() for cell in cells))
    return "\n".join(rows)


def _inline(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind in ("text", "code_inline", "html_inline"):
        return node.content
    if kind in ("softbreak", "hardbreak"):
        return "\n"
    if kind == "link":
        label = "".join(_inline(child) for child in node.children)
        href = str(node.attrs.get("href", ""))
        if not href or label in (href, href.removeprefix("mailto:")):
            return label or href
        return f"{label} ({href})"
    if kind == "image":
        alt = "".join(_inline(child) for child in node.children) or node.content
        src = str(node.attrs.get("src", ""))
        return f"{alt} ({src})" if alt else src
    return "".join(_inline(child) for child in node.children)
