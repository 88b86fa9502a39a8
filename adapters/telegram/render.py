"""CommonMark (what Animas write) into Telegram's HTML (what `parse_mode=HTML` accepts).

markdown-it-py parses the reply; the tree is written out with only the tags Telegram takes:
`b` (bold, headings), `i`, `s`, `code`, `pre` / `pre><code class="language-x">`, `a href`
and `blockquote`. Everything else is text, escaped (`&`, `<`, `>`), so an Anima quoting
`<script>` or a stray `&` shows it as written; raw HTML in the markdown is text too. Lists
become `•` / `1.` lines, a rule a line of `─`. Link targets are the ones markdown-it lets
through (no `javascript:` and the like). Telegram cannot nest a blockquote in a blockquote or
put anything inside code, so inner quotes are flattened and code inside a link is plain text.

Chunking (the hub's `split_text`) runs on this HTML, and it cuts at blank lines first. The
renderer keeps every cut it can take balanced:

* top-level blocks are separated by a blank line, and nothing inside a block has one (a
  blank line inside code is written with `&#10;`, which Telegram decodes);
* no line starts with three backticks or tildes (written `&#96;` / `&#126;`), so the
  chunker never mistakes HTML for a markdown fence;
* a block longer than a message is split here (`split_balanced`): its open tags are closed
  at the end of each piece and reopened at the start of the next.

So every chunk is well-formed HTML whose visible text fits the limit. `balance` repairs a
prefix cut anywhere (the streamed preview), and `to_plain` gives the visible text, which is
what is resent when Telegram rejects the HTML after all.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode

MAX_TEXT = 4096
_MD = MarkdownIt("commonmark", {"html": False}).enable("strikethrough")
_INLINE_TAGS = {"strong": "b", "em": "i", "s": "s"}
_LANGUAGE = re.compile(r"[\w+#.-]{1,32}")
_BLANK_LINE = re.compile(r"\n(?=[^\S\n]*\n)")
_FENCE_LIKE = re.compile(r"^( {0,3})([`~])(?=\2\2)", re.MULTILINE)
# Our own output: a tag, an entity, or text (every `<` and `&` in text is escaped).
_TOKEN = re.compile(r"<[^<>]*>|&[#\w]+;|<[^<>]*$|&[#\w]*$|[^<&]+|[<&]")
_TAG_NAME = re.compile(r"</?([a-z][a-z0-9-]*)")
RULE = "─" * 12


def escape(text: str) -> str:
    return html.escape(text, quote=False)


class _Inline:
    """Writes one inline run; tags already open are not opened again inside themselves."""

    def __init__(self) -> None:
        self.open: list[str] = []
        self.out: list[str] = []

    def walk(self, node: SyntaxTreeNode) -> None:
        for child in node.children:
            self.node(child)

    def node(self, node: SyntaxTreeNode) -> None:
        kind = node.type
        if kind in ("text", "text_special"):
            self.out.append(escape(node.content))
        elif kind in ("softbreak", "hardbreak"):
            self.out.append("\n")
        elif kind == "code_inline":
            code = escape(node.content)
            self.out.append(code if "a" in self.open else f"<code>{code}</code>")
        elif kind in _INLINE_TAGS:
            self.wrap(_INLINE_TAGS[kind], "", node)
        elif kind == "link":
            self.link(str(node.attrs.get("href") or ""), node)
        elif kind == "image":
            self.link(str(node.attrs.get("src") or ""), node)
        else:  # anything else inline markdown-it may add: its text
            self.out.append(escape(node.content))
            self.walk(node)

    def link(self, href: str, node: SyntaxTreeNode) -> None:
        if not href or "a" in self.open:
            self.walk(node)
            return
        self.wrap("a", f' href="{html.escape(href, quote=True)}"', node)

    def wrap(self, tag: str, attrs: str, node: SyntaxTreeNode) -> None:
        if tag in self.open:
            self.walk(node)
            return
        self.open.append(tag)
        start = len(self.out)
        self.walk(node)
        self.open.pop()
        if len(self.out) > start:  # an empty span would be an empty entity: leave it out
            self.out.insert(start, f"<{tag}{attrs}>")
            self.out.append(f"</{tag}>")


def _inline(node: SyntaxTreeNode) -> str:
    writer = _Inline()
    for child in node.children:
        writer.walk(child) if child.type == "inline" else writer.node(child)
    return "".join(writer.out)


def _code(node: SyntaxTreeNode) -> str:
    code = escape(node.content.rstrip("\n")) or " "
    words = node.info.split()
    language = words[0] if words and _LANGUAGE.fullmatch(words[0]) else ""
    if language:
        return f'<pre><code class="language-{escape(language)}">{code}</code></pre>'
    return f"<pre>{code}</pre>"


class _Blocks:
    """Block structure into lines: each top-level block one string, no blank line inside."""

    def __init__(self) -> None:
        self.quote_depth = 0

    def blocks(self, node: SyntaxTreeNode) -> list[str]:
        out = [self.block(child) for child in node.children]
        return [block for block in out if block.strip()]

    def block(self, node: SyntaxTreeNode) -> str:
        kind = node.type
        if kind == "paragraph":
            return _inline(node)
        if kind == "heading":
            text = _inline(node)
            return f"<b>{text}</b>" if text else ""
        if kind in ("fence", "code_block"):
            return _code(node)
        if kind == "hr":
            return RULE
        if kind == "blockquote":
            return self.quote(node)
        if kind in ("bullet_list", "ordered_list"):
            return self.list(node, kind == "ordered_list")
        if kind == "inline":
            return _inline(node)
        return escape(node.content)  # html_block and others: as text

    def quote(self, node: SyntaxTreeNode) -> str:
        self.quote_depth += 1
        try:
            inner = "\n".join(self.blocks(node))
        finally:
            self.quote_depth -= 1
        if self.quote_depth > 0 or not inner:
            return inner  # Telegram cannot nest blockquotes: the inner one is flattened
        return f"<blockquote>{inner}</blockquote>"

    def list(self, node: SyntaxTreeNode, ordered: bool) -> str:
        lines: list[str] = []
        for item in node.children:
            marker = f"{item.info or len(lines) + 1}. " if ordered else "• "
            body = "\n".join(self.blocks(item)) or ""
            first, *rest = body.split("\n") if body else [""]
            lines.append(marker + first)
            lines.extend("  " + line if line else line for line in rest)
        return "\n".join(lines)


def _protect(block: str) -> str:
    """No blank line and no fence-like line start inside a block (see the module doc)."""
    block = _BLANK_LINE.sub("&#10;", block.strip("\n"))
    return _FENCE_LIKE.sub(lambda m: m[1] + ("&#96;" if m[2] == "`" else "&#126;"), block)


def to_html(markdown: str, limit: int = MAX_TEXT) -> str:
    """Render CommonMark as Telegram HTML whose blank-line cuts are all balanced."""
    if not markdown.strip():
        return ""
    tree = SyntaxTreeNode(_MD.parse(markdown))
    pieces: list[str] = []
    for block in _Blocks().blocks(tree):
        protected = _protect(block)
        pieces.extend(split_balanced(protected, limit) if len(protected) > limit else [protected])
    return "\n\n".join(pieces)


# --- our own HTML, token by token ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Open:
    name: str
    tag: str  # the opening tag as written, attributes included


def _tokens(source: str) -> list[str]:
    return _TOKEN.findall(source)


def _closers(stack: list[_Open]) -> str:
    return "".join(f"</{o.name}>" for o in reversed(stack))


def _step(stack: list[_Open], token: str) -> list[_Open] | None:
    """The stack after `token`; None for a closing tag that closes nothing open."""
    if not token.startswith("<") or not token.endswith(">"):
        return stack
    match = _TAG_NAME.match(token)
    if match is None:
        return stack
    name = match.group(1)
    if token.startswith("</"):
        for index in range(len(stack) - 1, -1, -1):
            if stack[index].name == name:
                return stack[:index] + stack[index + 1 :]
        return None
    return [*stack, _Open(name, token)]


def _atoms(source: str, limit: int) -> list[str]:
    """Tokens, with text further cut at newlines and spaces (the places to split at)."""
    atoms: list[str] = []
    for token in _tokens(source):
        if token.startswith(("<", "&")) and len(token) > 1:
            if len(token) <= limit // 2:  # a tag too long to fit (a giant href): left out
                atoms.append(token)
        else:
            atoms.extend(part for part in re.split(r"(\n|[^\S\n]+)", token) if part)
    return atoms


def _reopen(stack: list[_Open], limit: int) -> list[_Open]:
    """What the next piece reopens: links dropped when their tags would crowd it."""
    if sum(len(o.tag) for o in stack) <= limit // 4:
        return stack
    return [o for o in stack if o.name != "a"]


def split_balanced(source: str, limit: int) -> list[str]:
    """Split our HTML into pieces of at most `limit` characters, each balanced: the tags
    open at a cut are closed before it and reopened after it. Cuts at a newline (which the
    piece boundary then replaces) when one fits, else at a space, else inside a word."""
    atoms = _atoms(source, limit)
    pieces: list[str] = []
    stack: list[_Open] = []
    index = 0
    while index < len(atoms):
        stack = _reopen(stack, limit)
        piece = [o.tag for o in stack]
        used = sum(len(t) for t in piece)
        state = stack
        cut: tuple[int, int, list[_Open]] | None = None  # atoms taken, resume at, stack
        space: tuple[int, int, list[_Open]] | None = None
        position = index
        while position < len(atoms):
            atom = atoms[position]
            after = _step(state, atom)
            if after is None:  # a closer whose opener was not reopened: leave it out
                atoms.pop(position)
                continue
            if used + len(atom) + len(_closers(after)) > limit:
                break
            if atom == "\n":
                cut = (position, position + 1, state)
            elif atom.isspace():
                space = (position, position + 1, state)
            used += len(atom)
            state = after
            position += 1
        if position == len(atoms):
            pieces.append("".join(piece + atoms[index:]) + _closers(state))
            break
        chosen = cut or space
        if chosen is None or chosen[0] == index:
            chosen = _hard_cut(atoms, index, position, limit - used - len(_closers(state)), state)
        taken, resume, state = chosen
        pieces.append("".join(piece + atoms[index:taken]) + _closers(state))
        index, stack = resume, state
    return [p for p in pieces if p]


def _hard_cut(
    atoms: list[str], index: int, position: int, room: int, state: list[_Open]
) -> tuple[int, int, list[_Open]]:
    """No newline or space fits: cut inside the atom that overflows (text only), or before
    it (a tag or an entity is never cut)."""
    atom = atoms[position]
    if position > index and (atom.startswith(("<", "&")) or room <= 0):
        return position, position, state
    room = max(1, room)
    atoms[position : position + 1] = [atom[:room], atom[room:]]
    return position + 1, position + 1, state


def balance(source: str) -> str:
    """Make a prefix of our HTML well-formed: a tag or entity cut off at its end is dropped,
    stray `<` and `&` are escaped, closers of nothing open are left out, and the tags still
    open are closed."""
    out: list[str] = []
    stack: list[_Open] = []
    tokens = _tokens(source)
    for number, token in enumerate(tokens):
        last = number == len(tokens) - 1
        if token.startswith("<") and token.endswith(">") and len(token) > 2:
            after = _step(stack, token)
            if after is not None:
                stack = after
                out.append(token)
        elif token.startswith(("<", "&")) and not token.endswith((">", ";")):
            if not last:  # not cut off by the prefix: a stray character, shown as text
                out.append(escape(token))
        else:
            out.append(token)
    return "".join(out) + _closers(stack)


def to_plain(source: str) -> str:
    """The visible text of our HTML: tags dropped, entities decoded."""
    return "".join(
        html.unescape(t) if t.startswith("&") else t
        for t in _tokens(balance(source))
        if not (t.startswith("<") and t.endswith(">"))
    )
