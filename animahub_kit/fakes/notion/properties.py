"""Page property values as a request sends them, checked as Notion checks them and turned
into the page property values Notion answers with; `Invalid` (Notion's words) otherwise.

Written types: title, rich_text, select, date; the others a schema may name are refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from animahub_kit.fakes.notion.errors import Invalid
from animahub_kit.fakes.notion.model import JSON, DataSource, rich_text, utf16_len

TEXT_MAX = 2000  # UTF-16 code units in one rich text object's text.content (and link url)
RICH_TEXT_ITEMS_MAX = 100
SELECT_NAME_MAX = 100
WRITABLE = ("title", "rich_text", "select", "date")


def parse_properties(source: DataSource, raw: Any) -> dict[str, JSON]:
    """`raw` (a request's `properties`) as page property values; Invalid as Notion."""
    if not isinstance(raw, dict):
        raise Invalid(
            f"body failed validation: body.properties should be an object, "
            f"instead was `{json.dumps(raw)}`."
        )
    values: dict[str, JSON] = {}
    for key, value in raw.items():
        name = source.property_named(str(key))
        if name is None:
            raise Invalid(f"{key} is not a property that exists.")
        kind = source.schema[name]
        where = f"body.properties.{name}"
        if kind in ("title", "rich_text") and isinstance(value, list):
            value = {kind: value}  # Notion takes the bare array too
        if not isinstance(value, dict) or kind not in value:
            raise Invalid(f"{name} is expected to be {kind}.")
        if value.get("type", kind) != kind:
            raise Invalid(f"{name} is expected to be {kind}.")
        if kind not in WRITABLE:
            raise Invalid(f"{name}: the fake Notion does not write {kind} properties.")
        inner = value[kind]
        if kind in ("title", "rich_text"):
            parsed: Any = parse_rich_text(inner, f"{where}.{kind}", name, kind)
        elif kind == "select":
            parsed = parse_select(source, name, inner, f"{where}.select")
        else:
            parsed = parse_date(name, inner, f"{where}.date")
        values[name] = {"type": kind, kind: parsed}
    return values


def from_plain(source: DataSource, properties: Mapping[str, str | None]) -> JSON:
    """Plain values (text for title and rich text, a start for a date, a name for a select)
    as a request's `properties`."""
    raw: JSON = {}
    for name, value in properties.items():
        kind = source.schema[name]
        if kind in ("title", "rich_text"):
            raw[name] = {kind: [{"text": {"content": value or ""}}]}
        elif kind == "date":
            raw[name] = {"date": None if value is None else {"start": value}}
        else:
            raw[name] = {kind: None if value is None else {"name": value}}
    return raw


def parse_rich_text(inner: Any, where: str, name: str, kind: str) -> list[JSON]:
    if not isinstance(inner, list):
        raise Invalid(f"{name} is expected to be {kind}.")
    if len(inner) > RICH_TEXT_ITEMS_MAX:
        raise Invalid(
            f"body failed validation: {where}.length should be ≤ `{RICH_TEXT_ITEMS_MAX}`, "
            f"instead was `{len(inner)}`."
        )
    items: list[JSON] = []
    for i, item in enumerate(inner):
        text = item.get("text") if isinstance(item, dict) else None
        if not isinstance(text, dict):
            raise Invalid(
                f"body failed validation: {where}[{i}].text should be defined, "
                "instead was `undefined`."
            )
        content = text.get("content")
        if not isinstance(content, str):
            raise Invalid(
                f"body failed validation: {where}[{i}].text.content should be a string, "
                f"instead was `{json.dumps(content)}`."
            )
        if utf16_len(content) > TEXT_MAX:
            raise Invalid(
                f"body failed validation: {where}[{i}].text.content.length should be "
                f"≤ `{TEXT_MAX}`, instead was `{utf16_len(content)}`."
            )
        link = text.get("link")
        if link is not None:
            _check_link(link, f"{where}[{i}]")
        annotations = item.get("annotations")
        items.append(
            rich_text(content, link, annotations if isinstance(annotations, dict) else None)
        )
    return items


def _check_link(link: Any, where: str) -> None:
    url = link.get("url") if isinstance(link, dict) else None
    if not isinstance(url, str) or not url:
        raise Invalid(f"body failed validation: {where}.text.link.url invalid.")
    if utf16_len(url) > TEXT_MAX:
        raise Invalid(
            f"body failed validation: {where}.text.link.url.length should be "
            f"≤ `{TEXT_MAX}`, instead was `{utf16_len(url)}`."
        )


def parse_select(source: DataSource, name: str, inner: Any, where: str) -> JSON | None:
    if inner is None:
        return None
    if not isinstance(inner, dict):
        raise Invalid(f"{name} is expected to be select.")
    option_name = inner.get("name")
    option_id = inner.get("id")
    if option_name is None and option_id is None:
        raise Invalid(
            f"body failed validation: {where}.name should be defined, instead was `undefined`."
        )
    if option_name is not None:
        if not isinstance(option_name, str):
            raise Invalid(f"{name} is expected to be select.")
        if utf16_len(option_name) > SELECT_NAME_MAX:
            raise Invalid(
                f"body failed validation: {where}.name.length should be ≤ "
                f"`{SELECT_NAME_MAX}`, instead was `{utf16_len(option_name)}`."
            )
        if "," in option_name:
            raise Invalid(f"Invalid select option, commas not allowed: {option_name}")
    option = source.option(name, option_name, option_id)
    if option is None:
        raise Invalid(f"Invalid select option id: {option_id}")
    return {"id": option["id"], "name": option["name"], "color": option["color"]}


def parse_date(name: str, inner: Any, where: str) -> JSON | None:
    if inner is None:
        return None
    if not isinstance(inner, dict):
        raise Invalid(f"{name} is expected to be date.")
    for key in ("start", "end"):
        value = inner.get(key)
        if value is None and key == "end":
            continue
        if not isinstance(value, str) or not _iso(value):
            raise Invalid(
                f"body failed validation: {where}.{key} should be a valid ISO 8601 date "
                f"string, instead was `{json.dumps(value)}`."
            )
    return {
        "start": inner["start"],
        "end": inner.get("end"),
        "time_zone": inner.get("time_zone"),
    }


def _iso(value: str) -> bool:
    try:
        if len(value) == 10:
            date.fromisoformat(value)
        else:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
