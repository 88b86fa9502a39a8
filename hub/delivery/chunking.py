"""Split a long markdown reply into chunks that each fit one chat message.

Every platform caps the length of a message (Discord 2,000 characters, Slack and
Telegram about 4,000), and an Anima's reply is often longer. A blind cut at the
limit breaks words and sentences and, worst of all, fenced code blocks: the rest
of the code then renders as prose and the next message renders as code. So
`split_text` cuts at the most natural boundary that still fills the chunk
(paragraph, then line, then sentence, then whitespace, then a hard cut), and when
it must cut inside a code fence it closes the fence at the end of the chunk and
reopens it, with the same info string, at the start of the next one.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

MIN_LIMIT = 64

# Boundaries from most to least preferred; a match's start is the cut position.
_BOUNDARIES = (
    re.compile(r"\n(?=[^\S\n]*\n)"),  # paragraph: a line break before a blank line
    re.compile(r"\n"),  # line
    re.compile(r"(?<=[.!?])(?= )|(?<=[。！？])"),  # sentence
    re.compile(r"[^\S\n]"),  # whitespace inside a line
)
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")


@dataclass(frozen=True)
class _Fence:
    """A fenced code block, by the character offsets of its fence lines."""

    open_start: int  # start of the opening line
    open_end: int  # end of the opening line (before its newline)
    close_start: int  # start of the closing line; len(text) if never closed
    close_end: int  # end of the closing line
    reopen: str  # line that reopens the block at the start of a chunk
    close: str  # line that closes the block at the end of a chunk

    def inside(self, pos: int) -> bool:
        """Whether a chunk boundary at `pos` falls within the block's content."""
        return self.open_end < pos < self.close_start


def _find_fences(text: str, limit: int) -> list[_Fence]:
    fences: list[_Fence] = []
    opened: tuple[int, int, str, str] | None = None  # start, end, line, marker
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        if opened is None:
            opened = _parse_opener(line, start, limit)
        elif _is_closer(line, opened[3]):
            fences.append(_make_fence(opened, start, end, limit))
            opened = None
        start = end + 1
    if opened is not None:
        fences.append(_make_fence(opened, len(text), len(text), limit))
    return fences


def _parse_opener(line: str, start: int, limit: int) -> tuple[int, int, str, str] | None:
    match = _FENCE_OPEN.fullmatch(line)
    if match is None or len(match[1]) > limit // 4:
        return None  # not a fence, or a marker too long to repeat in every chunk
    if match[1][0] == "`" and "`" in match[2]:
        return None  # a backtick fence's info string cannot contain a backtick
    return start, start + len(line), line.rstrip(), match[1]


def _is_closer(line: str, marker: str) -> bool:
    pattern = rf" {{0,3}}{re.escape(marker)}{re.escape(marker[0])}*\s*"
    return re.fullmatch(pattern, line) is not None


def _make_fence(opened: tuple[int, int, str, str], start: int, end: int, limit: int) -> _Fence:
    open_start, open_end, line, marker = opened
    reopen = line if len(line) <= limit // 4 else marker
    return _Fence(open_start, open_end, start, end, reopen, marker)


def _next_start(text: str, cut: int) -> int:
    """Skip whitespace after a cut, keeping the indentation of a new line."""
    first = cut
    while first < len(text) and text[first].isspace():
        first += 1
    newline = text.rfind("\n", cut, first)
    return newline + 1 if newline >= 0 else first


class _Splitter:
    def __init__(self, text: str, limit: int) -> None:
        self.text = text
        self.limit = limit
        self.fences = _find_fences(text, limit)
        self.fence_starts = [fence.open_start for fence in self.fences]
        self.cuts = [[m.start() for m in pattern.finditer(text)] for pattern in _BOUNDARIES]

    def run(self) -> list[str]:
        chunks: list[str] = []
        pos = self.text.rfind("\n", 0, _next_start(self.text, 0)) + 1
        while pos < len(self.text):
            head = self._head(pos)
            rest = self.text[pos:].rstrip()
            if len(head) + len(rest) <= self.limit:
                chunks.append(head + rest)
                break
            cut = self._best_cut(pos, len(head))
            end = self._trim_end(pos, cut)
            chunks.append(head + self.text[pos:end] + self._tail(end))
            pos = _next_start(self.text, cut)
        return chunks

    def _fence_at(self, pos: int) -> _Fence | None:
        """The only fence that can contain `pos`: the last one opened before it."""
        index = bisect_left(self.fence_starts, pos) - 1
        return self.fences[index] if index >= 0 else None

    def _head(self, pos: int) -> str:
        fence = self._fence_at(pos)
        return fence.reopen + "\n" if fence is not None and fence.inside(pos) else ""

    def _tail(self, end: int) -> str:
        fence = self._fence_at(end)
        return "\n" + fence.close if fence is not None and fence.inside(end) else ""

    def _trim_end(self, pos: int, cut: int) -> int:
        while cut > pos and self.text[cut - 1].isspace():
            cut -= 1
        return cut

    def _best_cut(self, pos: int, head: int) -> int:
        """The last cut that fits, at the most preferred kind of boundary that has one."""
        budget = self.limit - head
        for cuts in self.cuts:
            first, last = bisect_right(cuts, pos), bisect_right(cuts, pos + budget)
            for cut in reversed(cuts[first:last]):
                if self._fits(pos, cut, head, strict=True):
                    return cut
        for strict in (True, False):
            for cut in range(pos + budget, pos, -1):
                if self._fits(pos, cut, head, strict=strict):
                    return cut
        raise AssertionError("unreachable: fence lines take at most half of the limit")

    def _fits(self, pos: int, cut: int, head: int, *, strict: bool) -> bool:
        end = self._trim_end(pos, cut)
        if end == pos or head + end - pos + len(self._tail(end)) > self.limit:
            return False
        return not strict or self._keeps_fence_lines(end, _next_start(self.text, cut))

    def _keeps_fence_lines(self, end: int, start: int) -> bool:
        """Refuse to cut through a fence line or to strand one in a chunk by itself."""
        fence = self._fence_at(end)
        if fence is not None and fence.open_start < end <= fence.open_end:
            return False  # the chunk would end in or right after the opening line
        fence = self._fence_at(start)
        return not (fence is not None and fence.close_start <= start < fence.close_end)


def split_text(text: str, limit: int) -> list[str]:
    """Split markdown text into chunks of at most `limit` characters each (len() of the str)."""
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT} characters, got {limit}")
    if not text.strip():
        return []
    if len(text) <= limit:
        return [text]
    return _Splitter(text, limit).run()
