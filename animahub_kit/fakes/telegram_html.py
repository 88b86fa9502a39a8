"""Telegram's side of `parse_mode=HTML`, strict as the Bot API is
(animahub_kit/fakes/telegram_server).

`parse(html)` turns a message's HTML into the plain text and entities Telegram stores, or
raises `EntityError` with the text Telegram answers ("can't parse entities: ...") for what it
rejects: a tag it does not know, a tag not closed or closed out of order, an attribute it
does not take, a bare `<`, `>` or `&`, an unknown named entity, or entities it cannot nest
(anything inside `code`/`pre` but `pre > code`, a blockquote in a blockquote).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

_TAG_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
}
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^<>]*)?)\s*>")
_ATTR = re.compile(r"""\s*([a-zA-Z-]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_ENTITY = re.compile(r"&(#[0-9]{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z]+);")


class EntityError(ValueError):
    """What Telegram answers for HTML it cannot parse (400)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"Bad Request: can't parse entities: {detail}")


def u16(text: str) -> int:
    """Length in UTF-16 code units: the unit of Telegram's entity offsets."""
    return len(text.encode("utf-16-le")) // 2


@dataclass
class _Open:
    name: str
    type: str
    start: int  # UTF-16 offset in the plain text
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Parsed:
    text: str
    entities: list[dict[str, Any]]


def _attributes(name: str, raw: str, offset: int) -> dict[str, Any]:
    attrs: dict[str, str] = {}
    for match in _ATTR.finditer(raw):
        if match.group(1):
            value = next((g for g in match.group(2, 3, 4) if g is not None), "")
            attrs[match.group(1).lower()] = html.unescape(value)
    extra: dict[str, Any] = {}
    for key, value in attrs.items():
        if name == "a" and key == "href":
            extra["url"] = value
        elif name == "code" and key == "class" and value.startswith("language-"):
            extra["language"] = value.removeprefix("language-")
        elif name == "span" and key == "class" and value == "tg-spoiler":
            extra["spoiler"] = True
        elif name == "blockquote" and key == "expandable":
            extra["expandable"] = True
        else:
            raise EntityError(
                f'Unsupported attribute "{key}" of tag "{name}" at byte offset {offset}'
            )
    if name == "a" and "url" not in extra:
        raise EntityError(f'Tag "a" must have attribute href at byte offset {offset}')
    if name == "span" and not extra.get("spoiler"):
        raise EntityError(f'Tag "span" must have class "tg-spoiler" at byte offset {offset}')
    return extra


def _check_nesting(name: str, stack: list[_Open], offset: int) -> None:
    if (
        stack
        and stack[-1].type in ("code", "pre")
        and not (name == "code" and stack[-1].type == "pre")
    ):
        raise EntityError(f'Can\'t nest "{name}" inside "{stack[-1].name}" at byte offset {offset}')
    if name == "blockquote" and any(o.type == "blockquote" for o in stack):
        raise EntityError(f"Blockquote entities can't be nested at byte offset {offset}")


def _text(piece: str, offset: int) -> str:
    """Decode entities of a text run; a bare `&`, `<` or `>` is an error, as on Telegram."""
    out: list[str] = []
    pos = 0
    for match in _ENTITY.finditer(piece):
        out.append(piece[pos : match.start()])
        body = match.group(1)
        if body.startswith("#x"):
            out.append(chr(int(body[2:], 16)))
        elif body.startswith("#"):
            out.append(chr(int(body[1:])))
        elif body in _NAMED:
            out.append(_NAMED[body])
        else:
            raise EntityError(f'Unsupported HTML entity "&{body};" at byte offset {offset}')
        pos = match.end()
    out.append(piece[pos:])
    decoded_source = "".join(out)
    rest = _ENTITY.sub("", piece)
    for char in "<>&":
        if char in rest:
            raise EntityError(f"Unexpected character {char!r} at byte offset {offset}")
    return decoded_source


def parse(source: str) -> Parsed:
    """Telegram HTML into (plain text, entities); raises EntityError like the Bot API."""
    text: list[str] = []
    length = 0
    stack: list[_Open] = []
    entities: list[dict[str, Any]] = []
    pos = 0
    for match in _TAG.finditer(source):
        offset = len(source[: match.start()].encode())
        plain = _text(source[pos : match.start()], offset)
        text.append(plain)
        length += u16(plain)
        pos = match.end()
        closing, name = match.group(1) == "/", match.group(2).lower()
        if name not in _TAG_TYPES:
            kind = "end" if closing else "start"
            raise EntityError(f'Unsupported {kind} tag "{name}" at byte offset {offset}')
        if closing:
            if not stack or stack[-1].name != name:
                raise EntityError(f"Unexpected end tag at byte offset {offset}")
            opened = stack.pop()
            _close(opened, length, entities)
            continue
        _check_nesting(name, stack, offset)
        stack.append(
            _Open(name, _TAG_TYPES[name], length, _attributes(name, match.group(3), offset))
        )
    tail = _text(source[pos:], len(source[:pos].encode()))
    text.append(tail)
    if stack:
        raise EntityError(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    plain_text = "".join(text)
    entities.sort(key=lambda e: (e["offset"], -e["length"]))
    return Parsed(plain_text, entities)


def _close(opened: _Open, end: int, entities: list[dict[str, Any]]) -> None:
    if end == opened.start:
        return  # Telegram drops empty entities
    entity: dict[str, Any] = {"type": opened.type, "offset": opened.start}
    entity["length"] = end - opened.start
    if opened.type == "text_link":
        entity["url"] = opened.extra["url"]
    elif opened.type == "blockquote" and opened.extra.get("expandable"):
        entity["type"] = "expandable_blockquote"
    elif opened.type == "code" and "language" in opened.extra:
        # `<pre><code class="language-x">`: one pre entity with the language
        entity = {**entity, "type": "pre", "language": opened.extra["language"]}
    elif opened.type == "pre" and entities:
        last = entities[-1]
        if last["type"] == "pre" and (last["offset"], last["length"]) == (
            opened.start,
            end - opened.start,
        ):
            return  # already recorded by its inner code, with the language
    entities.append(entity)
