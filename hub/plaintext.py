"""Text people send, kept as data inside the hub's markdown files (docs/memory.md, "Text
stays text").

The hub's markdown is structure and text at once: an episode day is a `## HH:MM` heading
per item with its metadata in an `<!-- memory: {...} -->` comment, a profile keeps its
facts under `## What Animas have learned`, a note opens with `---` front matter. A message
holding such lines must never be read back as structure (a teammate could otherwise plant
an item with any scope into another person's memory), so every writer puts text through
`encode_block` and every reader takes it back with `decode_block`; a field that must stay on
one line (a heading, a bullet) goes through `one_line`.

The encoding is markdown's own backslash escape, on the lines that could be structure:
a line (split at every line boundary Python knows, CR, CRLF, U+2028, NEL and the rest, not
just LF) that begins, after any backslashes and up to three spaces, with a heading
(`#`, `##`, ... then a space or the end), an HTML comment (`<!--`) or a front matter fence
(`---`, `+++`) gets one more backslash in front. Decoding takes one away from such lines
only, so every text comes back exactly and a line that never looked like structure is
never touched. A markdown renderer shows an escaped line as the text it was (`\\## 09:30`
renders as "## 09:30"), so the files stay readable; and since readers decode before
anything else sees the text, recall and the index see what was said, not the escapes.

Files written before the encoding read the same, except a line that itself began with a
backslash before one of those marks: it reads with one backslash less, as a markdown
renderer showed it anyway.
"""

from __future__ import annotations

import re

# What a reader could take for structure at the start of a line (after the escapes).
_STRUCTURE = re.compile(r" {0,3}(?:#+(?:\s|\Z)|<!--|---|\+\+\+)")
ESCAPE = "\\"


def _is_structure(line: str) -> bool:
    """Whether a line's content (no line break), less its leading escapes, looks like
    structure."""
    return _STRUCTURE.match(line.lstrip(ESCAPE)) is not None


def _content(segment: str) -> str:
    """A segment of `splitlines(keepends=True)` without its line break."""
    lines = segment.splitlines()
    return lines[0] if lines else ""


def encode_block(text: str) -> str:
    """`text` with every line that could be read as structure escaped (see the module)."""
    segments = text.splitlines(keepends=True)
    return "".join(ESCAPE + s if _is_structure(_content(s)) else s for s in segments)


def decode_block(text: str) -> str:
    """What `encode_block` was given: one escape less on each escaped structure line."""
    segments = text.splitlines(keepends=True)
    return "".join(
        s[1:] if s.startswith(ESCAPE) and _is_structure(_content(s)) else s for s in segments
    )


def one_line(text: str) -> str:
    """The text on one line, each run of whitespace (line breaks of every kind included)
    one space: for a field the file keeps on its own line (a heading's name, a bullet)."""
    return " ".join(text.split())
