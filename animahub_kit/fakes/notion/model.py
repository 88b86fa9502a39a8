"""The fake Notion's data model: data sources and pages as it keeps them, and Notion's small
formats (ids, timestamps, rich text objects, a property value's plain form)."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]
Plain = str | None

_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_ANNOTATIONS: JSON = {
    "bold": False,
    "italic": False,
    "strikethrough": False,
    "underline": False,
    "code": False,
    "color": "default",
}


def utf16_len(text: str) -> int:
    """What JavaScript's `.length` says of `text`: Notion's measure of a text's length."""
    return len(text.encode("utf-16-le")) // 2


def canonical_id(raw: str) -> str | None:
    """`raw` (with or without dashes) as a dashed lowercase UUID; None if it is not one."""
    compact = raw.replace("-", "")
    if not _HEX32.match(compact):
        return None
    return str(uuid.UUID(compact))


def now() -> str:
    """Notion's timestamps: ISO 8601, rounded down to the minute."""
    moment = datetime.now(UTC).replace(second=0, microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:00.000Z")


def slug(title: str) -> str:
    return "-".join(re.findall(r"\w+", title))


def rich_text(content: str, link: JSON | None = None, annotations: JSON | None = None) -> JSON:
    return {
        "type": "text",
        "text": {"content": content, "link": link},
        "annotations": {**_ANNOTATIONS, **(annotations or {})},
        "plain_text": content,
        "href": link.get("url") if link else None,
    }


def empty_value(kind: str) -> Any:
    if kind in ("title", "rich_text", "multi_select", "people", "files", "relation"):
        return []
    if kind == "checkbox":
        return False
    return None


def plain(value: JSON) -> Plain:
    kind = str(value.get("type"))
    inner = value.get(kind)
    if kind in ("title", "rich_text"):
        return "".join(str(item.get("plain_text", "")) for item in inner or [])
    if kind == "date":
        return None if inner is None else str(inner.get("start"))
    if kind in ("select", "status"):
        return None if inner is None else str(inner.get("name"))
    return None if inner is None else json.dumps(inner)


@dataclass
class DataSource:
    id: str  # a dashed UUID
    title: str
    schema: dict[str, str]  # property name -> type ("title", "rich_text", "select", "date", …)
    database_id: str
    shared: bool = True
    property_ids: dict[str, str] = field(default_factory=dict)
    options: dict[str, list[JSON]] = field(default_factory=dict)  # select name -> its options
    created_time: str = field(default_factory=now)

    @property
    def title_property(self) -> str | None:
        return next((name for name, kind in self.schema.items() if kind == "title"), None)

    def property_named(self, key: str) -> str | None:
        """The property `key` names, by its name or its id (Notion takes either)."""
        if key in self.schema:
            return key
        return next((name for name, pid in self.property_ids.items() if pid == key), None)

    def option(self, prop: str, name: str | None, option_id: str | None) -> JSON | None:
        """The select option by name (created when new, as Notion does) or by id."""
        options = self.options.setdefault(prop, [])
        for option in options:
            if (name is not None and option["name"] == name) or option["id"] == option_id:
                return option
        if name is None:
            return None
        option = {"id": str(uuid.uuid4()), "name": name, "color": "default", "description": None}
        options.append(option)
        return option


@dataclass
class Page:
    id: str  # a dashed UUID
    data_source_id: str
    database_id: str
    values: dict[str, JSON]  # name -> page property value, as Notion answers it
    markdown: str
    url: str
    created_time: str
    last_edited_time: str
    in_trash: bool = False
    history: list[str] = field(default_factory=list)  # earlier markdown, oldest first

    @property
    def properties(self) -> dict[str, Plain]:
        """Plain values: title and rich text as their text, a date as its start, a select as
        its name (None when empty)."""
        return {name: plain(value) for name, value in self.values.items()}

    @property
    def title(self) -> str:
        for value in self.values.values():
            if value.get("type") == "title":
                return plain(value) or ""
        return ""
