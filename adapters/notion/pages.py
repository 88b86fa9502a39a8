"""A report page's properties, filled to the data source's own schema.

The data source is the person's: only its title property (whatever it is called) and
`Report ID` (rich text: the delivery's idempotency key, how a retry finds the page it made)
are required. `Anima`, `Date`, `Kind`, `Status` and `Task` are filled when the data source
has them, as rich text or select (`Date` as a date); anything else is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

REPORT_ID = "Report ID"
TEXT_MAX = 2000  # UTF-16 code units in one rich text object (Notion counts as JavaScript does)
SELECT_MAX = 100  # characters in a select option's name
_TITLE_MAX = 200
_HEADING = re.compile(r"^#{1,6}\s+(.+)$")
_MARKUP = re.compile(r"[*_`~\[\]]|\(https?://[^)]*\)")


@dataclass(frozen=True, slots=True)
class Schema:
    title: str  # the name of the data source's title property
    types: Mapping[str, str]  # property name -> its type ("rich_text", "select", …)

    @classmethod
    def of(cls, data_source: Mapping[str, Any]) -> Schema:
        """The schema of a data source object; ValueError when reports cannot go there."""
        raw = data_source.get("properties")
        properties = raw if isinstance(raw, Mapping) else {}
        types = {
            str(name): str(value.get("type"))
            for name, value in properties.items()
            if isinstance(value, Mapping)
        }
        title = next((name for name, kind in types.items() if kind == "title"), None)
        if title is None:
            raise ValueError("the data source has no title property")
        if types.get(REPORT_ID) != "rich_text":
            raise ValueError(
                f"the data source needs a text property named {REPORT_ID!r} "
                "(how a report that is sent again finds its page)"
            )
        return cls(title, types)


@dataclass(frozen=True, slots=True)
class Report:
    """What a page says about the report it holds."""

    report_id: str
    title: str
    anima: str
    day: str  # YYYY-MM-DD
    kind: str
    status: str = "published"
    task: str = ""


def title_of(markdown: str) -> str:
    """The first heading, else the first line with text, without its markup."""
    lines = [line.strip() for line in markdown.splitlines() if line.strip()]
    heading = next((m.group(1) for line in lines if (m := _HEADING.match(line))), None)
    text = heading or (lines[0] if lines else "")
    plain = " ".join(_MARKUP.sub("", text).split())
    return plain[: _TITLE_MAX - 1] + "…" if len(plain) > _TITLE_MAX else plain or "Report"


def properties(schema: Schema, report: Report) -> dict[str, Any]:
    """The page's properties for `report`, in the data source's own types."""
    found: dict[str, Any] = {
        schema.title: {"title": [_text(report.title)]},
        REPORT_ID: {"rich_text": [_text(report.report_id)]},
    }
    for name, value in (
        ("Anima", report.anima),
        ("Kind", report.kind),
        ("Status", report.status),
        ("Task", report.task),
    ):
        kind = schema.types.get(name)
        if value and kind == "select":
            found[name] = {"select": {"name": _clip(value, SELECT_MAX).replace(",", " ")}}
        elif value and kind == "rich_text":
            found[name] = {"rich_text": [_text(value)]}
    if schema.types.get("Date") == "date":
        found["Date"] = {"date": {"start": report.day}}
    return found


def report_filter(report_id: str) -> dict[str, Any]:
    return {"property": REPORT_ID, "rich_text": {"equals": report_id}}


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": {"content": _clip(value, TEXT_MAX)}}


def _clip(value: str, units: int) -> str:
    """At most `units` UTF-16 code units (an emoji is two), never half a character."""
    encoded = value.encode("utf-16-le")
    return (
        value if len(encoded) <= 2 * units else encoded[: 2 * units].decode("utf-16-le", "ignore")
    )
