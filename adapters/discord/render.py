"""CommonMark into Discord's markdown.

Discord renders most of CommonMark as it is (emphasis, code, fences, quotes, lists, links,
`#`-`###` headings). What it shows literally is adapted, outside code fences only:
headings deeper than `###` become bold lines, pipe tables become a code block (monospace
keeps the columns aligned), and images become plain links (Discord previews them).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DEEP_HEADING = re.compile(r"^ {0,3}#{4,6}[ \t]+(.+?)[ \t#]*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def render(markdown: str) -> str:
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener[1][0] == fence[0] and len(opener[1]) >= len(fence):
                fence = None
            out.append(line)
        elif opener:
            fence = opener[1]
            out.append(line)
        elif _is_table_start(lines, i):
            end = i
            while end < len(lines) and lines[end].strip().startswith("|"):
                end += 1
            out.extend(["```", *lines[i:end], "```"])
            i = end
            continue
        else:
            out.append(_inline(line))
        i += 1
    return "\n".join(out)


def _is_table_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].strip().startswith("|")
        and i + 1 < len(lines)
        and _TABLE_RULE.match(lines[i + 1]) is not None
    )


def _inline(line: str) -> str:
    heading = _DEEP_HEADING.match(line)
    if heading:
        return f"**{heading[1]}**"
    return _IMAGE.sub(lambda m: f"[{m[1] or m[2]}]({m[2]})", line)
