"""The fake Notion's page requests: `POST /v1/pages`, `GET` / `PATCH /v1/pages/{id}`, and
`GET` / `PATCH /v1/pages/{id}/markdown` (the markdown kept as sent; Notion would round-trip
it through blocks)."""

from __future__ import annotations

import json

from aiohttp import web

from animahub_kit.fakes.notion.errors import Invalid
from animahub_kit.fakes.notion.model import JSON, DataSource, canonical_id, now, rich_text
from animahub_kit.fakes.notion.objects import markdown_object, page_object
from animahub_kit.fakes.notion.properties import parse_properties
from animahub_kit.fakes.notion.wire import Wire
from animahub_kit.fakes.notion.workspace import Workspace, url_of

ARCHIVED_MESSAGE = "Can't edit block that is archived. You must unarchive the block before editing."


class PageHandlers:
    def __init__(self, workspace: Workspace, wire: Wire) -> None:
        self._workspace = workspace
        self._wire = wire

    async def create(self, request: web.Request) -> web.Response:
        index, body, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        parent = body.get("parent")
        parent_id = ""
        if isinstance(parent, dict):
            parent_id = str(parent.get("data_source_id") or parent.get("database_id") or "")
        refused = self._wire.refusal(index, "pages.create", canonical_id(parent_id) or "")
        if refused is not None:
            return refused
        try:
            source = self._workspace.parent(parent)
            values = parse_properties(source, body.get("properties", {}))
            markdown = _markdown_of(body)
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)
        text = _heading_as_title(source, values, markdown or "")

        def act() -> JSON:
            page = self._workspace.new_page(source, values, text)
            return page_object(self._workspace, page)

        return await self._wire.finish(index, "pages.create", request, act)

    async def get(self, request: web.Request) -> web.Response:
        index, _, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        try:
            page = self._workspace.page(request.match_info["id"])
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)
        return self._wire.answer(index, page_object(self._workspace, page))

    async def update(self, request: web.Request) -> web.Response:
        index, body, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        channel = self._workspace.channel_of_page(request.match_info["id"])
        refused = self._wire.refusal(index, "pages.update", channel)
        if refused is not None:
            return refused
        try:
            page = self._workspace.page(request.match_info["id"])
            source = self._workspace.data_sources[page.data_source_id]
            trash = _trash_of(body)
            values = parse_properties(source, body.get("properties", {}))
            if values and page.in_trash and trash is not False:
                raise Invalid(ARCHIVED_MESSAGE)
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)

        def act() -> JSON:
            if trash is not None:
                page.in_trash = trash
            page.values.update(values)
            page.last_edited_time = now()
            page.url = url_of(page)
            return page_object(self._workspace, page)

        return await self._wire.finish(index, "pages.update", request, act)

    async def get_markdown(self, request: web.Request) -> web.Response:
        index, _, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        try:
            page = self._workspace.page(request.match_info["id"])
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)
        return self._wire.answer(index, markdown_object(page))

    async def update_markdown(self, request: web.Request) -> web.Response:
        index, body, refused = await self._wire.begin(request)
        if refused is not None:
            return refused
        channel = self._workspace.channel_of_page(request.match_info["id"])
        refused = self._wire.refusal(index, "pages.update_markdown", channel)
        if refused is not None:
            return refused
        try:
            page = self._workspace.page(request.match_info["id"])
            if page.in_trash:
                raise Invalid(ARCHIVED_MESSAGE)
            new = edited(page.markdown, body)
        except Invalid as exc:
            return self._wire.error(index, exc.status, exc.code, exc.message)

        def act() -> JSON:
            page.history.append(page.markdown)
            page.markdown = new
            page.last_edited_time = now()
            return markdown_object(page)

        return await self._wire.finish(index, "pages.update_markdown", request, act)


def _markdown_of(body: JSON) -> str | None:
    """A create's `markdown` (the body), refused with `children` or `content` as well."""
    markdown = body.get("markdown")
    if markdown is not None and not isinstance(markdown, str):
        raise Invalid(
            "body failed validation: body.markdown should be a string, "
            f"instead was `{json.dumps(markdown)}`."
        )
    for other in ("children", "content"):
        if markdown is not None and body.get(other) is not None:
            raise Invalid(
                f"body failed validation: body.markdown and body.{other} cannot both be present."
            )
    return markdown


def _heading_as_title(source: DataSource, values: dict[str, JSON], text: str) -> str:
    """With no title given, a leading `# heading` becomes the title (Notion documents this;
    that the heading then leaves the body is the fake's assumption): the body left."""
    title_name = source.title_property
    given = values.get(title_name) if title_name is not None else None
    if title_name is not None and not (given and given["title"]):
        lines = text.lstrip("\n").split("\n", 1)
        if lines[0].startswith("# ") and lines[0][2:].strip():
            values[title_name] = {
                "type": "title",
                "title": [rich_text(lines[0][2:].strip())],
            }
            text = lines[1].lstrip("\n") if len(lines) > 1 else ""
    return text


def _trash_of(body: JSON) -> bool | None:
    """An update's `in_trash` / `archived` (the last one given); None: neither."""
    trash: bool | None = None
    for key in ("in_trash", "archived"):
        if key in body:
            if not isinstance(body[key], bool):
                raise Invalid(
                    f"body failed validation: body.{key} should be a boolean, "
                    f"instead was `{json.dumps(body[key])}`."
                )
            trash = body[key]
    return trash


def edited(markdown: str, body: JSON) -> str:
    """The page's markdown after a `PATCH /v1/pages/{id}/markdown` body; Invalid if wrong."""
    kind = body.get("type")
    command = body.get(kind) if isinstance(kind, str) else None
    if kind not in ("replace_content", "insert_content") or not isinstance(command, dict):
        raise Invalid(
            "body failed validation: body.type should be `replace_content` or `insert_content` "
            f"(the ones the fake Notion speaks), instead was `{json.dumps(kind)}`."
        )
    if kind == "replace_content":
        new = command.get("new_str")
        if not isinstance(new, str):
            raise Invalid(
                "body failed validation: body.replace_content.new_str should be a string, "
                f"instead was `{json.dumps(new)}`."
            )
        return new
    return _inserted(markdown, command)


def _inserted(markdown: str, command: JSON) -> str:
    """`markdown` with an `insert_content` command's content: after the `after` selection
    ("start...end"), else at `position` (start or end; end when none)."""
    content = command.get("content")
    if not isinstance(content, str):
        raise Invalid(
            "body failed validation: body.insert_content.content should be a string, "
            f"instead was `{json.dumps(content)}`."
        )
    after = command.get("after")
    if isinstance(after, str):
        head, _, tail = after.partition("...")
        begin = markdown.find(head)
        end = markdown.find(tail, begin + len(head)) if begin >= 0 else -1
        if begin < 0 or end < 0:
            raise Invalid(f"Could not find the selection to insert after: {after}")
        cut = end + len(tail)
        return markdown[:cut] + content + markdown[cut:]
    position = command.get("position")
    where = position.get("type") if isinstance(position, dict) else "end"
    if where == "start":
        return content + markdown
    if where != "end":
        raise Invalid(
            "body failed validation: body.insert_content.position.type should be `start` or "
            f"`end`, instead was `{json.dumps(where)}`."
        )
    return markdown + content
