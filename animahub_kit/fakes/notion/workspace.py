"""What the fake Notion's workspace holds: the integration's bot, the data sources and the
pages (creation order); pages made, and data sources and pages found as a request names them
(400 for an id that is not one, 404 for one unknown or not shared with the integration)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping
from typing import Any

from animahub_kit.fakes.notion.errors import Invalid, not_found, path_id
from animahub_kit.fakes.notion.model import (
    JSON,
    DataSource,
    Page,
    canonical_id,
    empty_value,
    now,
    slug,
)
from animahub_kit.fakes.notion.properties import from_plain, parse_properties


class Workspace:
    def __init__(self, bot_id: str, bot_name: str, workspace_name: str) -> None:
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.workspace_name = workspace_name
        self.data_sources: dict[str, DataSource] = {}
        self.pages: list[Page] = []
        self.by_id: dict[str, Page] = {}
        self._property_ids = itertools.count(1)

    # set up by a test --------------------------------------------------------------------

    def add_data_source(
        self,
        id: str | None,
        title: str,
        properties: Mapping[str, str] | None,
        *,
        share: bool,
        database_id: str | None,
    ) -> DataSource:
        ds_id = canonical_id(id) if id is not None else str(uuid.uuid4())
        db_id = canonical_id(database_id) if database_id is not None else str(uuid.uuid4())
        if ds_id is None or db_id is None:
            raise ValueError(f"Notion ids are UUIDs: {id!r}, {database_id!r}")
        schema = dict(properties or {"Name": "title"})
        ids = {
            name: "title" if kind == "title" else f"%3A{next(self._property_ids):03d}"
            for name, kind in schema.items()
        }
        source = DataSource(ds_id, title, schema, db_id, share, ids)
        self.data_sources[ds_id] = source
        return source

    def add_page(
        self, data_source_id: str, properties: Mapping[str, str | None], markdown: str
    ) -> Page:
        source = self.data_sources[known_id(data_source_id)]
        raw = from_plain(source, properties)
        return self.new_page(source, parse_properties(source, raw), markdown)

    def pages_in(self, data_source_id: str) -> list[Page]:
        found = canonical_id(data_source_id)
        return [p for p in self.pages if p.data_source_id == found]

    # what requests make and find ---------------------------------------------------------

    def new_page(self, source: DataSource, values: dict[str, JSON], markdown: str) -> Page:
        full = {
            name: values.get(name) or {"type": kind, kind: empty_value(kind)}
            for name, kind in source.schema.items()
        }
        page_id = str(uuid.uuid4())
        stamp = now()
        page = Page(page_id, source.id, source.database_id, full, markdown, "", stamp, stamp)
        page.url = url_of(page)
        self.pages.append(page)
        self.by_id[page_id] = page
        return page

    def source(self, raw_id: str, name: str = "data_source_id") -> DataSource:
        ds_id = path_id(raw_id, name)
        source = self.data_sources.get(ds_id)
        if source is None or not source.shared:
            raise not_found("data_source", ds_id)
        return source

    def page(self, raw_id: str) -> Page:
        page_id = path_id(raw_id, "page_id")
        page = self.by_id.get(page_id)
        if page is None or not self.data_sources[page.data_source_id].shared:
            raise not_found("page", page_id)
        return page

    def parent(self, parent: Any) -> DataSource:
        if not isinstance(parent, dict):
            raise Invalid(
                "body failed validation: body.parent should be defined, instead was `undefined`."
            )
        if parent.get("data_source_id") is not None:
            return self.source(str(parent["data_source_id"]), "data_source_id")
        if parent.get("database_id") is not None:
            db_id = canonical_id(str(parent["database_id"]))
            for source in self.data_sources.values():
                if source.database_id == db_id and source.shared:
                    return source
            raise not_found("database", db_id or str(parent["database_id"]))
        raise Invalid(
            "body failed validation: body.parent.data_source_id should be defined, instead was "
            "`undefined`. (the fake Notion takes pages under data sources only)"
        )

    def channel_of_page(self, raw_id: str) -> str:
        page_id = canonical_id(raw_id)
        page = self.by_id.get(page_id) if page_id is not None else None
        return page.data_source_id if page is not None else ""


def known_id(raw: str) -> str:
    found = canonical_id(raw)
    if found is None:
        raise KeyError(raw)
    return found


def url_of(page: Page) -> str:
    title = slug(page.title)
    hexid = page.id.replace("-", "")
    return f"https://www.notion.so/{title}-{hexid}" if title else f"https://www.notion.so/{hexid}"
