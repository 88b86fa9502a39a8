"""The fake Notion's data source requests: `GET /v1/data_sources/{id}` and `POST
/v1/data_sources/{id}/query` (one property filter, or `and` / `or` of them; `page_size` and
`start_cursor` page through the matches in creation order, pages in the trash left out)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from animahub_kit.fakes.notion.errors import Invalid
from animahub_kit.fakes.notion.model import JSON, DataSource, Page, canonical_id
from animahub_kit.fakes.notion.objects import data_source_object, page_object
from animahub_kit.fakes.notion.wire import Wire
from animahub_kit.fakes.notion.workspace import Workspace

PAGE_SIZE_MAX = 100

_ACCEPTED = {  # a property's type -> the filter conditions it takes
    "title": ("title", "rich_text"),
    "rich_text": ("rich_text",),
    "select": ("select",),
    "date": ("date",),
}


class DataSourceHandlers:
    def __init__(self, workspace: Workspace, wire: Wire) -> None:
        self._workspace = workspace
        self._wire = wire

    async def get(self, request: web.Request) -> web.Response:
        index, _, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        try:
            source = self._workspace.source(request.match_info["id"])
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)
        return self._wire.answer(index, data_source_object(self._workspace, source))

    async def query(self, request: web.Request) -> web.Response:
        index, body, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        channel = canonical_id(request.match_info["id"]) or ""
        refused = self._wire.refusal(index, "data_sources.query", channel)
        if refused is not None:
            return refused
        try:
            source = self._workspace.source(request.match_info["id"])
            match = matcher(source, body.get("filter"))
            size = _page_size(body)
            pages = self._workspace.pages_in(source.id)
            found = [p for p in pages if not p.in_trash and match(p)]
            start = _start(found, body.get("start_cursor"))
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)
        chunk = found[start : start + size]
        rest = found[start + size :]

        def act() -> JSON:
            return {
                "object": "list",
                "results": [page_object(self._workspace, p) for p in chunk],
                "next_cursor": rest[0].id if rest else None,
                "has_more": bool(rest),
                "type": "page_or_data_source",
                "page_or_data_source": {},
            }

        return await self._wire.finish(index, "data_sources.query", request, act)


def _page_size(body: JSON) -> int:
    size = body.get("page_size", PAGE_SIZE_MAX)
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 100:
        raise Invalid(
            "body failed validation: body.page_size should be a number between 1 and "
            f"{PAGE_SIZE_MAX}, instead was `{json.dumps(size)}`."
        )
    return size


def _start(found: list[Page], cursor: Any) -> int:
    """Where `start_cursor` (a page id among `found`) starts; 0 without one."""
    if cursor is None:
        return 0
    ids = [p.id for p in found]
    wanted = canonical_id(cursor) if isinstance(cursor, str) else None
    if wanted not in ids:
        raise Invalid(
            "body failed validation: body.start_cursor should be a valid cursor, "
            f"instead was `{json.dumps(cursor)}`."
        )
    return ids.index(wanted)


def matcher(source: DataSource, flt: Any) -> Callable[[Page], bool]:
    """A query's `filter` as a test of a page; Invalid as Notion words it."""
    if flt is None:
        return lambda page: True
    if not isinstance(flt, dict):
        raise Invalid("body failed validation: body.filter should be an object.")
    for compound in ("and", "or"):
        if compound in flt:
            parts = flt[compound]
            if not isinstance(parts, list):
                raise Invalid(f"body failed validation: body.filter.{compound} invalid.")
            matchers = [matcher(source, part) for part in parts]
            combine = all if compound == "and" else any
            return lambda page: combine(m(page) for m in matchers)
    key = flt.get("property")
    name = source.property_named(str(key)) if isinstance(key, str) else None
    if name is None:
        raise Invalid(f"Could not find property with name or id: {key}")
    kind = source.schema[name]
    conditions = [k for k in flt if k != "property" and k != "type"]
    if len(conditions) != 1 or not isinstance(flt[conditions[0]], dict):
        raise Invalid("body failed validation: body.filter should hold one condition.")
    filter_kind = conditions[0]
    if filter_kind not in _ACCEPTED.get(kind, ()):
        raise Invalid(
            "The property type in the database does not match the filter provided: "
            f"database property {kind} does not match filter {filter_kind}"
        )
    test = _test(filter_kind, flt[filter_kind])
    return lambda page: test(page.properties.get(name) or "")


def _test(filter_kind: str, condition: JSON) -> Callable[[str], bool]:
    """One condition (`{"equals": "x"}`) as a test of a property's plain value."""
    if len(condition) != 1:
        raise Invalid(f"body failed validation: body.filter.{filter_kind} needs one operator.")
    op, operand = next(iter(condition.items()))
    tests: dict[str, Callable[[str], bool]] = {
        "equals": lambda v: v == operand,
        "does_not_equal": lambda v: v != operand,
        "contains": lambda v: str(operand) in v,
        "does_not_contain": lambda v: str(operand) not in v,
        "starts_with": lambda v: v.startswith(str(operand)),
        "ends_with": lambda v: v.endswith(str(operand)),
        "is_empty": lambda v: (v == "") is bool(operand),
        "is_not_empty": lambda v: (v != "") is bool(operand),
    }
    test = tests.get(op)
    if test is None:
        raise Invalid(f"body failed validation: body.filter.{filter_kind}.{op} unsupported.")
    return test
