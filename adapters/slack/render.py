"""CommonMark (what Animas write) into Slack mrkdwn (what Slack shows).

slackify-markdown does the conversion: `**bold**` -> `*bold*`, `[label](url)` -> `<url|label>`,
lists to bullets, headings to bold lines, fenced code to plain ``` fences. It escapes `&`, `<`
and `>` in prose but not inside code, where Slack still reads `<...>` as a link or mention;
the renderer below escapes code too, so `if a<b and c>d` shows as written.

Mentions of people (`<@U123>`) pass through, so an Anima can address someone; broadcasts
(`<!channel>`, `<!here>`, `<!everyone>`) are shown as text and notify nobody:
a reply is shaped by untrusted text (DESIGN §7.3) and must not be able to page a workspace.
"""

from __future__ import annotations

import re
from typing import Any

from slackify_markdown.slackify import SlackifyMarkdown  # type: ignore[import-untyped]

_SPECIALS = re.compile(r"[&<>]")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_BROADCAST = re.compile(r"<(!(?:here|channel|everyone)(?:\|[^<>]*)?)>")


def escape(text: str) -> str:
    """Escape the three characters Slack treats as control characters in message text."""
    return _SPECIALS.sub(lambda m: _ENTITIES[m.group(0)], text)


class _Renderer(SlackifyMarkdown):  # type: ignore[misc]
    """slackify-markdown's renderer, with code contents escaped as Slack requires."""

    def code_inline(self, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        return f"`{escape(tokens[idx].content)}`"

    def code_block(self, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        return f"```\n{escape(tokens[idx].content)}```\n"

    def fence(self, tokens: list[Any], idx: int, options: Any, env: Any) -> str:
        return f"```\n{escape(tokens[idx].content)}```\n"


def to_mrkdwn(markdown: str) -> str:
    """Render CommonMark as Slack mrkdwn; the result has no trailing newline."""
    if not markdown.strip():
        return ""
    rendered: str = _Renderer(markdown).slackify()
    return _BROADCAST.sub(r"&lt;\1&gt;", rendered).rstrip("\n")
