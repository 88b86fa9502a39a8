"""The JSON objects the fake Notion answers with, shaped as Notion's: the integration's bot
user, a data source (its schema as property objects), a page (every schema property in
page-property-value form) and a page's markdown."""

from __future__ import annotations

from animahub_kit.fakes.notion.model import JSON, DataSource, Page, rich_text
from animahub_kit.fakes.notion.workspace import Workspace


def user(workspace: Workspace) -> JSON:
    return {"object": "user", "id": workspace.bot_id}


def bot(workspace: Workspace) -> JSON:
    return {
        "object": "user",
        "id": workspace.bot_id,
        "name": workspace.bot_name,
        "avatar_url": None,
        "type": "bot",
        "bot": {
            "owner": {"type": "workspace", "workspace": True},
            "workspace_name": workspace.workspace_name,
        },
    }


def data_source_object(workspace: Workspace, source: DataSource) -> JSON:
    properties: JSON = {}
    for name, kind in source.schema.items():
        config: JSON = {}
        if kind in ("select", "multi_select"):
            config = {"options": list(source.options.get(name, []))}
        elif kind == "number":
            config = {"format": "number"}
        properties[name] = {
            "id": source.property_ids[name],
            "name": name,
            "description": "",
            "type": kind,
            kind: config,
        }
    return {
        "object": "data_source",
        "id": source.id,
        "created_time": source.created_time,
        "last_edited_time": source.created_time,
        "created_by": user(workspace),
        "last_edited_by": user(workspace),
        "title": [rich_text(source.title)],
        "description": [],
        "icon": None,
        "parent": {"type": "database_id", "database_id": source.database_id},
        "database_parent": {"type": "workspace", "workspace": True},
        "is_inline": False,
        "archived": False,
        "in_trash": False,
        "properties": properties,
        "url": f"https://www.notion.so/{source.database_id.replace('-', '')}",
        "public_url": None,
    }


def page_object(workspace: Workspace, page: Page) -> JSON:
    source = workspace.data_sources[page.data_source_id]
    properties = {
        name: {"id": source.property_ids.get(name, name), **value}
        for name, value in page.values.items()
    }
    return {
        "object": "page",
        "id": page.id,
        "created_time": page.created_time,
        "last_edited_time": page.last_edited_time,
        "created_by": user(workspace),
        "last_edited_by": user(workspace),
        "cover": None,
        "icon": None,
        "parent": {
            "type": "data_source_id",
            "data_source_id": page.data_source_id,
            "database_id": page.database_id,
        },
        "archived": page.in_trash,
        "in_trash": page.in_trash,
        "is_locked": False,
        "properties": properties,
        "url": page.url,
        "public_url": None,
    }


def markdown_object(page: Page) -> JSON:
    return {
        "object": "page_markdown",
        "id": page.id,
        "markdown": page.markdown,
        "truncated": False,
        "unknown_block_ids": [],
    }
