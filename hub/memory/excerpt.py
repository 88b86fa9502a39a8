"""Markdown text shown in part: a streamed reply's frame, or a long memory line cut to fit.

Both the CLI (a reply as it streams, `memory search`'s table) and offline replies cut
Markdown text; a cut that leaves "**Dana Scu…" open turns the rest bold, so every cut
closes what it opened."""

from __future__ import annotations

import re

from hub.memory.lexical import tokenize

# What a memory line holds before its words: when ("[2026-12-04 09:30]") and who and where
# ("**Dana Scully** (a direct conversation on web):", or a session summary's "(…, 6 turns)").
HEADER = re.compile(
    r"^\s*(?:\[[^\]\n]{1,40}\]\s*)?(?:\*\*(?P<who>[^*\n]{1,40})\*\*(?: \([^)\n]{1,80}\))?:?)?"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*")  # CJK: no space after
_SPEAKER = re.compile(r"\*\*[^*\n]{1,40}\*\*:?")  # "**Dana Scully**:" inside a summary
# An underscore opens or closes emphasis only at a word's edge: API_KEY_2 is no span.
_UNDER_OPENS = re.compile(r"(?<![\w\\])_(?=[^\s_]|$)")
_UNDER_CLOSES = re.compile(r"(?<=[^\s_\\])_(?!\w)")


def closed(partial: str) -> str:
    """Markdown cut off with its open bold, italic and code spans closed: a frame drawn while
    "**No language model" waits for its "**" would show the asterisks. A mark that nothing
    follows yet is left out, and a closing one goes before trailing spaces, where Markdown
    reads it."""
    if partial.count("```") % 2:
        return partial + "\n```"
    body = partial.rstrip()
    spaces = partial[len(body) :]
    still_open = []  # (where it opened, its mark): the later one closes first
    if body.count("**") % 2:
        still_open.append((body.rfind("**"), "**"))
    if body.replace("```", "").count("`") % 2:
        still_open.append((body.rfind("`"), "`"))
    opens = [m.start() for m in _UNDER_OPENS.finditer(body)]
    if len(opens) > len(_UNDER_CLOSES.findall(body)):  # "_(answered in offline mod…"
        still_open.append((opens[-1], "_"))
    for at, mark in sorted(still_open, reverse=True):
        body = body[:at] if at + len(mark) == len(body) else body + mark
    return body + spaces


def cut(flat: str, limit: int) -> str:
    """One-line `flat` within `limit` characters ("…" where it was cut), its spans closed."""
    return flat if len(flat) <= limit else closed(flat[: limit - 1] + "…")


def excerpt(flat: str, wanted: set[str], limit: int) -> str:
    """A one-line memory line within `limit`: when the first sentence that shares a search
    term with `wanted` lies past the limit (a session summary holds a whole conversation),
    its header (when, who, where), " … " and that sentence on, not the start. A speaker's
    bold name in a sentence is no match."""
    if len(flat) <= limit:
        return flat
    header = HEADER.match(flat)
    head = flat[: header.end()] if header else ""
    body = flat[len(head) :]
    for sentence in _SENTENCE_END.split(body):
        if wanted & set(tokenize(_SPEAKER.sub(" ", sentence))):
            at = body.index(sentence)
            if len(head) + at + len(sentence) > limit:
                return cut(f"{head} … {body[at:].lstrip()}", limit)
            break
    return cut(flat, limit)


_BLOCK_MARK = re.compile(r"^(\s*)(\d+)([.)])(?=\s|$)|^(\s*)([-+*>]|#{1,6})(?=\s|$)")


def inline(line: str) -> str:
    """One line of text that Markdown reads as a line, not as the list item, heading or quote
    its first characters would start ("1. run tests" drew as " 1 run tests")."""
    return _BLOCK_MARK.sub(lambda m: f"{m[1]}{m[2]}\\{m[3]}" if m[2] else f"{m[4]}\\{m[5]}", line)


# What Markdown reads as markup inside a line: emphasis, code, links, images, HTML and
# entities, strikethrough and tables. A backslash before any ASCII punctuation is
# CommonMark's escape, so the text renders as itself.
_INLINE_MARKS = re.compile(r"([\\`*_\[\]<>~|&!])")


def literal(text: str) -> str:
    """One line of someone's text as Markdown that renders as exactly that text: no mark of
    it can open a span the rest leaves unclosed ("_(answered in offl…"), bold what follows,
    or start a list or heading."""
    return inline(_INLINE_MARKS.sub(r"\\\1", " ".join(text.split())))
