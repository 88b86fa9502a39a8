"""A local fake of the Notion REST API (2025-09-03 and later: data sources) for the real SDK.

It runs in the test's event loop (aiohttp.web on 127.0.0.1); `notion_client.AsyncClient(auth=
fake.token, base_url=fake.url, retry=False)` talks to it unchanged (the SDK appends `/v1/`).
Every request needs ``Authorization: Bearer <fake.token>`` (else 401 ``unauthorized``, "API
token is invalid.") and a ``Notion-Version`` header (else 400 ``missing_version``); the versions
seen are kept in :attr:`FakeNotion.notion_versions`. Ids in paths and bodies are accepted with
or without dashes; anything but 32 hex digits is a 400 ``validation_error`` ("path failed
validation: path.page_id should be a valid uuid, ..."). Errors are Notion's error object,
``{"object": "error", "status", "code", "message", "request_id"}``, which the SDK turns into
``notion_client.APIResponseError`` (``.code``, ``.status``, ``.headers``); an unknown path or
method is 400 ``invalid_request_url``, a body that is not JSON 400 ``invalid_json``.

* ``GET /v1/users/me``: the integration's bot user (``type: "bot"``, workspace-owned).
* ``GET /v1/data_sources/{id}``: a data source added with :meth:`FakeNotion.add_data_source`,
  its schema as property objects (``{"id", "name", "type", <type>: {...}}``; select options
  grow as pages use new names, as Notion creates them). Unknown, or not shared with the
  integration (``share=False``, :meth:`set_shared`): 404 ``object_not_found``, "Could not find
  data_source with ID: ... Make sure the relevant pages and databases are shared with your
  integration."
* ``POST /v1/data_sources/{id}/query``: ``filter`` is one property filter (``{"property": name
  or id, "rich_text" | "title" | "select" | "date": {"equals" | "does_not_equal" | "contains" |
  "starts_with" | "is_empty" | "is_not_empty": ...}}``) or ``and`` / ``or`` of them; an unknown
  property is 400 "Could not find property with name or id: X", a condition of another type 400
  too. ``page_size`` (1..100) and ``start_cursor`` page through the matches (creation order);
  pages in the trash are left out. Answers ``{"object": "list", "results", "next_cursor",
  "has_more", "type": "page_or_data_source", "page_or_data_source": {}}``.
* ``POST /v1/pages``: ``parent`` ``{"type": "data_source_id", "data_source_id"}`` (or without
  ``type``; ``database_id`` picks the database's first data source). ``properties`` are checked
  against the schema: an unknown name is 400 "X is not a property that exists.", a value of the
  wrong shape "X is expected to be rich_text.", a text content over 2,000 (counted in UTF-16
  code units, as Notion's JavaScript does) "body failed validation: body.properties.X.
  rich_text[0].text.content.length should be ≤ `2000`, instead was `N`.", more than 100 rich
  text items, a select name over 100 or with a comma, a date whose start is not ISO 8601.
  Written types: title, rich_text, select, date (others in a schema are served, empty, and
  refused on write). ``markdown`` is the body; with ``children`` or ``content`` as well: 400.
  With no title given, a leading ``# heading`` becomes the title (Notion documents this; that
  the heading then leaves the body is the fake's assumption). The page answers with a dashed
  UUID, ``url`` ``https://www.notion.so/<Title-Slug>-<id hex>``, minute-rounded
  ``created_time`` / ``last_edited_time``, ``parent`` ``{"type": "data_source_id",
  "data_source_id", "database_id"}``, every schema property in page-property-value form.
* ``GET /v1/pages/{id}``; ``PATCH /v1/pages/{id}`` (``properties``, ``in_trash`` /
  ``archived``; editing the properties of a page in the trash is 400 "Can't edit block that is
  archived. ..."); ``GET /v1/pages/{id}/markdown`` (``{"object": "page_markdown", "id",
  "markdown", "truncated": false, "unknown_block_ids": []}``); ``PATCH /v1/pages/{id}/markdown``
  with ``{"type": "replace_content", "replace_content": {"new_str"}}`` or ``{"type":
  "insert_content", "insert_content": {"content", "position"?: {"type": "start" | "end"},
  "after"?: "start...end"}}``, answering the page_markdown object. The markdown is kept as sent
  (Notion would round-trip it through blocks). Unknown page: 404 ``object_not_found``.

Faults, for the requests that create or change something (``pages.create``, ``pages.update``,
``pages.update_markdown``; ``data_sources.query`` too when ``fault_queries``), checked after
authentication and before anything else: :meth:`rate_limit` (the next ``times`` answer 429
``rate_limited``, "You have been rate limited. Please try again in a few minutes.", with
``Retry-After`` in whole seconds), :attr:`FakeNotion.faults` (tests/fakes/faults.py, asked
with the data source as the channel and ``whole_seconds=True``: Notion's limit is the whole
connection's, and a hub writes to one data source), then, once the request is valid,
:meth:`fail_next` (5xx: 500 ``internal_server_error``, 503 ``service_unavailable``, 504
``gateway_timeout``; ``carried_out=True`` does the write first, as a Notion 5xx after the write
happened) and :meth:`drop_next_response` (the next page create, or the kind named, is carried
out and recorded, then the connection is closed without an answer: httpx raises a transport
error, which the SDK passes through). A wrong :attr:`token` (set it to revoke) gets 401.

Inspection: :attr:`pages` (creation order; :class:`Page` with ``properties`` as plain values,
``markdown`` and its ``history``), :meth:`pages_in`, :meth:`page`, :attr:`calls` (method,
path, JSON body, the headers of interest, status; 0 when dropped), :meth:`calls_to`,
:meth:`requests_to`. A fake built with a fixed ``port`` can be started later.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal

from aiohttp import web

from tests.fakes.faults import FaultPolicy, RateLimit
from tests.fakes.listener import Listener, Served

JSON = dict[str, Any]
Kind = Literal["pages.create", "pages.update", "pages.update_markdown", "data_sources.query"]
Plain = str | None

TEXT_MAX = 2000  # UTF-16 code units in one rich text object's text.content (and link url)
RICH_TEXT_ITEMS_MAX = 100
SELECT_NAME_MAX = 100
PAGE_SIZE_MAX = 100
WRITABLE = ("title", "rich_text", "select", "date")

AUTH_MESSAGE = "API token is invalid."
VERSION_MESSAGE = (
    "Notion-Version header failed validation: Notion-Version header should be defined, "
    "instead was undefined."
)
RATE_MESSAGE = "You have been rate limited. Please try again in a few minutes."
ARCHIVED_MESSAGE = "Can't edit block that is archived. You must unarchive the block before editing."
SHARE_HINT = "Make sure the relevant pages and databases are shared with your integration."
_SERVER_ERRORS = {500: "internal_server_error", 503: "service_unavailable", 504: "gateway_timeout"}
_SERVER_MESSAGES = {
    "internal_server_error": "Unexpected error occurred.",
    "service_unavailable": "Notion is unavailable, please try again later.",
    "gateway_timeout": "Timed out while trying to complete this request.",
}
_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_ANNOTATIONS: JSON = {
    "bold": False,
    "italic": False,
    "strikethrough": False,
    "underline": False,
    "code": False,
    "color": "default",
}
_RECORDED_HEADERS = ("Authorization", "Notion-Version", "Content-Type", "User-Agent")


def utf16_len(text: str) -> int:
    """What JavaScript's `.length` says of `text`: Notion's measure of a text's length."""
    return len(text.encode("utf-16-le")) // 2


def canonical_id(raw: str) -> str | None:
    """`raw` (with or without dashes) as a dashed lowercase UUID; None if it is not one."""
    compact = raw.replace("-", "")
    if not _HEX32.match(compact):
        return None
    return str(uuid.UUID(compact))


def _now() -> str:
    """Notion's timestamps: ISO 8601, rounded down to the minute."""
    moment = datetime.now(UTC).replace(second=0, microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M:00.000Z")


def _slug(title: str) -> str:
    return "-".join(re.findall(r"\w+", title))


def _rich_text(content: str, link: JSON | None = None, annotations: JSON | None = None) -> JSON:
    return {
        "type": "text",
        "text": {"content": content, "link": link},
        "annotations": {**_ANNOTATIONS, **(annotations or {})},
        "plain_text": content,
        "href": link.get("url") if link else None,
    }


def _empty_value(kind: str) -> Any:
    if kind in ("title", "rich_text", "multi_select", "people", "files", "relation"):
        return []
    if kind == "checkbox":
        return False
    return None


def _plain(value: JSON) -> Plain:
    kind = str(value.get("type"))
    inner = value.get(kind)
    if kind in ("title", "rich_text"):
        return "".join(str(item.get("plain_text", "")) for item in inner or [])
    if kind == "date":
        return None if inner is None else str(inner.get("start"))
    if kind in ("select", "status"):
        return None if inner is None else str(inner.get("name"))
    return None if inner is None else json.dumps(inner)


@dataclass(frozen=True)
class ApiCall:
    method: str
    path: str
    body: JSON | None
    headers: dict[str, str]  # Authorization, Notion-Version, Content-Type, User-Agent
    status: int = 0  # filled in when answered; 0: no answer (dropped)


@dataclass
class DataSource:
    id: str  # a dashed UUID
    title: str
    schema: dict[str, str]  # property name -> type ("title", "rich_text", "select", "date", …)
    database_id: str
    shared: bool = True
    property_ids: dict[str, str] = field(default_factory=dict)
    options: dict[str, list[JSON]] = field(default_factory=dict)  # select name -> its options
    created_time: str = field(default_factory=_now)

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
        return {name: _plain(value) for name, value in self.values.items()}

    @property
    def title(self) -> str:
        for value in self.values.values():
            if value.get("type") == "title":
                return _plain(value) or ""
        return ""


@dataclass
class _Limit:
    remaining: int
    retry_after: float


class _Invalid(Exception):
    """A request Notion would refuse: status, code and message of the error object."""

    def __init__(self, message: str, status: int = 400, code: str = "validation_error") -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _not_found(kind: str, object_id: str) -> _Invalid:
    return _Invalid(
        f"Could not find {kind} with ID: {object_id}. {SHARE_HINT}", 404, "object_not_found"
    )


def _path_id(raw: str, name: str) -> str:
    found = canonical_id(raw)
    if found is None:
        raise _Invalid(
            f"path failed validation: path.{name} should be a valid uuid, "
            f"instead was `{json.dumps(raw)}`."
        )
    return found


class FakeNotion(Served):
    def __init__(
        self,
        *,
        token: str = "ntn_fake_integration_token",
        bot_id: str = "9a3b2c1d-0e0f-4a1b-8c2d-3e4f5a6b7c8d",
        bot_name: str = "AnimaHub",
        workspace_name: str = "AnimaHub Test Workspace",
        port: int = 0,
        fault_queries: bool = False,
    ) -> None:
        self.token = token  # set it to something else to revoke the integration
        self.bot_id = bot_id
        self.bot_name = bot_name
        self.workspace_name = workspace_name
        self.fault_queries = fault_queries  # data_sources.query is faulted like a write
        self._listener = Listener(port)
        self.data_sources: dict[str, DataSource] = {}
        self.pages: list[Page] = []
        self.calls: list[ApiCall] = []
        self.notion_versions: set[str] = set()
        self._by_id: dict[str, Page] = {}
        self._limits: list[_Limit] = []
        self._failing: list[tuple[int, bool]] = []  # (status, carried out), in order
        self._drops: list[Kind] = []
        self._property_ids = itertools.count(1)
        # Consulted for every write (tests/fakes/faults.py); None: no faults.
        self.faults: FaultPolicy | None = None

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeNotion:
        app = web.Application()
        app.router.add_get("/v1/users/me", self._users_me)
        app.router.add_get("/v1/data_sources/{id}", self._data_source)
        app.router.add_post("/v1/data_sources/{id}/query", self._query)
        app.router.add_post("/v1/pages", self._create_page)
        app.router.add_get("/v1/pages/{id}", self._get_page)
        app.router.add_patch("/v1/pages/{id}", self._update_page)
        app.router.add_get("/v1/pages/{id}/markdown", self._get_markdown)
        app.router.add_patch("/v1/pages/{id}/markdown", self._update_markdown)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        await self._listener.serve(app)
        return self

    async def stop(self) -> None:
        await self._listener.close()

    @property
    def url(self) -> str:
        """The SDK's `base_url` (it adds `/v1/` itself)."""
        return self._listener.url

    # the workspace -----------------------------------------------------------------------

    def add_data_source(
        self,
        id: str | None = None,
        title: str = "Reports",
        properties: Mapping[str, str] | None = None,
        *,
        share: bool = True,
        database_id: str | None = None,
    ) -> DataSource:
        """A data source with the schema `properties` (name -> type), in a database of its
        own unless `database_id` says which; `share=False`: the integration cannot see it."""
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

    def set_shared(self, data_source_id: str, shared: bool = True) -> None:
        """Share the data source with the integration, or take the connection away."""
        self.data_sources[self._known_id(data_source_id)].shared = shared

    def add_page(
        self, data_source_id: str, properties: Mapping[str, str | None], markdown: str = ""
    ) -> Page:
        """A page that is already there (made by someone, or by an earlier run), from plain
        values: text for title and rich text, a start for a date, a name for a select."""
        source = self.data_sources[self._known_id(data_source_id)]
        raw: JSON = {}
        for name, value in properties.items():
            kind = source.schema[name]
            if kind in ("title", "rich_text"):
                raw[name] = {kind: [{"text": {"content": value or ""}}]}
            elif kind == "date":
                raw[name] = {"date": None if value is None else {"start": value}}
            else:
                raw[name] = {kind: None if value is None else {"name": value}}
        return self._new_page(source, self._parse_properties(source, raw), markdown)

    # fault injection ---------------------------------------------------------------------

    def rate_limit(self, times: int = 1, retry_after: float = 1.0) -> None:
        """Answer the next `times` writes 429 with `Retry-After` (whole seconds, rounded up)."""
        self._limits.append(_Limit(times, retry_after))

    def fail_next(self, status: int = 503, *, carried_out: bool = False) -> None:
        """Answer the next valid write `status`; `carried_out`: after doing it."""
        self._failing.append((status, carried_out))

    def drop_next_response(self, kind: Kind = "pages.create") -> None:
        """Carry out the next `kind` request and record it, then close without answering."""
        self._drops.append(kind)

    # what the fake saw -------------------------------------------------------------------

    def pages_in(self, data_source_id: str) -> list[Page]:
        found = canonical_id(data_source_id)
        return [p for p in self.pages if p.data_source_id == found]

    def page(self, page_id: str) -> Page:
        return self._by_id[self._known_id(page_id)]

    def calls_to(self, path_prefix: str, method: str | None = None) -> list[ApiCall]:
        """Requests whose path starts with `path_prefix` (e.g. "/v1/pages"), of `method`."""
        return [
            c
            for c in self.calls
            if c.path.startswith(path_prefix) and (method is None or c.method == method.upper())
        ]

    def requests_to(self, path_prefix: str, method: str | None = None) -> int:
        return len(self.calls_to(path_prefix, method))

    # the wire ----------------------------------------------------------------------------

    @staticmethod
    def _known_id(raw: str) -> str:
        found = canonical_id(raw)
        if found is None:
            raise KeyError(raw)
        return found

    def _record(self, request: web.Request, body: JSON | None) -> int:
        headers = {k: request.headers[k] for k in _RECORDED_HEADERS if k in request.headers}
        self.calls.append(ApiCall(request.method, request.path, body, headers))
        version = request.headers.get("Notion-Version")
        if version:
            self.notion_versions.add(version)
        return len(self.calls) - 1

    def _answer(self, index: int, body: JSON, status: int = 200, **headers: str) -> web.Response:
        call = self.calls[index]
        self.calls[index] = ApiCall(call.method, call.path, call.body, call.headers, status)
        request_id = str(uuid.uuid4())
        return web.json_response(
            {**body, "request_id": request_id},
            status=status,
            headers={"x-notion-request-id": request_id, **headers},
        )

    def _error(
        self, index: int, status: int, code: str, message: str, **headers: str
    ) -> web.Response:
        body = {"object": "error", "status": status, "code": code, "message": message}
        return self._answer(index, body, status, **headers)

    async def _begin(self, request: web.Request) -> tuple[int, JSON, web.Response | None]:
        """Record the request; refuse a wrong token, a missing version, a body not JSON."""
        raw = await request.read() if request.can_read_body else b""
        parsed: Any = None
        malformed = False
        if raw:
            try:
                parsed = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                malformed = True
        body = parsed if isinstance(parsed, dict) else None
        index = self._record(request, body)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return index, {}, self._error(index, 401, "unauthorized", AUTH_MESSAGE)
        if not request.headers.get("Notion-Version"):
            return index, {}, self._error(index, 400, "missing_version", VERSION_MESSAGE)
        if malformed:
            return index, {}, self._error(index, 400, "invalid_json", "Error parsing JSON body.")
        if raw and body is None:
            shown = json.dumps(parsed)
            message = f"body failed validation: body should be an object, instead was `{shown}`."
            return index, {}, self._error(index, 400, "validation_error", message)
        return index, body or {}, None

    def _refusal(self, index: int, kind: Kind, channel: str) -> web.Response | None:
        """A 429 or 5xx decided before the request is looked at (rate_limit, faults)."""
        if kind == "data_sources.query" and not self.fault_queries:
            return None
        for limit in self._limits:
            if limit.remaining > 0:
                limit.remaining -= 1
                return self._rate_limited(index, limit.retry_after)
        if self.faults is None:
            return None
        fault = self.faults.decide("notion", channel, kind, whole_seconds=True)
        if fault is None:
            return None
        if isinstance(fault, RateLimit):
            return self._rate_limited(index, fault.retry_after)
        return self._server_error(index, fault.status)

    def _rate_limited(self, index: int, retry_after: float | None) -> web.Response:
        extra = {} if retry_after is None else {"Retry-After": str(math.ceil(retry_after))}
        return self._error(index, 429, "rate_limited", RATE_MESSAGE, **extra)

    def _server_error(self, index: int, status: int) -> web.Response:
        code = _SERVER_ERRORS.get(status, "internal_server_error")
        return self._error(index, status, code, _SERVER_MESSAGES[code])

    async def _finish(
        self, index: int, kind: Kind, request: web.Request, act: Callable[[], JSON]
    ) -> web.Response:
        """Carry out a valid write: fail_next first, then the write, then maybe drop."""
        if (kind != "data_sources.query" or self.fault_queries) and self._failing:
            status, carried_out = self._failing.pop(0)
            if carried_out:
                act()
            return self._server_error(index, status)
        answer = act()
        if kind in self._drops:
            self._drops.remove(kind)
            return await self._dropped(request)
        return self._answer(index, answer)

    async def _dropped(self, request: web.Request) -> web.Response:
        """The request was carried out; its answer never reaches the caller."""
        transport = request.transport
        if transport is not None:
            transport.close()
        await asyncio.sleep(0.05)
        return web.Response(status=200)

    def _source(self, raw_id: str, name: str = "data_source_id") -> DataSource:
        ds_id = _path_id(raw_id, name)
        source = self.data_sources.get(ds_id)
        if source is None or not source.shared:
            raise _not_found("data_source", ds_id)
        return source

    def _page(self, raw_id: str) -> Page:
        page_id = _path_id(raw_id, "page_id")
        page = self._by_id.get(page_id)
        if page is None or not self.data_sources[page.data_source_id].shared:
            raise _not_found("page", page_id)
        return page

    def _channel_of_page(self, raw_id: str) -> str:
        page_id = canonical_id(raw_id)
        page = self._by_id.get(page_id) if page_id is not None else None
        return page.data_source_id if page is not None else ""

    # objects -----------------------------------------------------------------------------

    def _user(self) -> JSON:
        return {"object": "user", "id": self.bot_id}

    def _bot(self) -> JSON:
        return {
            "object": "user",
            "id": self.bot_id,
            "name": self.bot_name,
            "avatar_url": None,
            "type": "bot",
            "bot": {
                "owner": {"type": "workspace", "workspace": True},
                "workspace_name": self.workspace_name,
            },
        }

    def _data_source_object(self, source: DataSource) -> JSON:
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
            "created_by": self._user(),
            "last_edited_by": self._user(),
            "title": [_rich_text(source.title)],
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

    def _page_object(self, page: Page) -> JSON:
        source = self.data_sources[page.data_source_id]
        properties = {
            name: {"id": source.property_ids.get(name, name), **value}
            for name, value in page.values.items()
        }
        return {
            "object": "page",
            "id": page.id,
            "created_time": page.created_time,
            "last_edited_time": page.last_edited_time,
            "created_by": self._user(),
            "last_edited_by": self._user(),
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

    @staticmethod
    def _markdown_object(page: Page) -> JSON:
        return {
            "object": "page_markdown",
            "id": page.id,
            "markdown": page.markdown,
            "truncated": False,
            "unknown_block_ids": [],
        }

    # validation --------------------------------------------------------------------------

    def _parse_properties(self, source: DataSource, raw: Any) -> dict[str, JSON]:
        """`raw` (a request's `properties`) as page property values; _Invalid as Notion."""
        if not isinstance(raw, dict):
            raise _Invalid(
                f"body failed validation: body.properties should be an object, "
                f"instead was `{json.dumps(raw)}`."
            )
        values: dict[str, JSON] = {}
        for key, value in raw.items():
            name = source.property_named(str(key))
            if name is None:
                raise _Invalid(f"{key} is not a property that exists.")
            kind = source.schema[name]
            where = f"body.properties.{name}"
            if kind in ("title", "rich_text") and isinstance(value, list):
                value = {kind: value}  # Notion takes the bare array too
            if not isinstance(value, dict) or kind not in value:
                raise _Invalid(f"{name} is expected to be {kind}.")
            if value.get("type", kind) != kind:
                raise _Invalid(f"{name} is expected to be {kind}.")
            if kind not in WRITABLE:
                raise _Invalid(f"{name}: the fake Notion does not write {kind} properties.")
            inner = value[kind]
            if kind in ("title", "rich_text"):
                parsed: Any = self._parse_rich_text(inner, f"{where}.{kind}", name, kind)
            elif kind == "select":
                parsed = self._parse_select(source, name, inner, f"{where}.select")
            else:
                parsed = self._parse_date(name, inner, f"{where}.date")
            values[name] = {"type": kind, kind: parsed}
        return values

    @staticmethod
    def _parse_rich_text(inner: Any, where: str, name: str, kind: str) -> list[JSON]:
        if not isinstance(inner, list):
            raise _Invalid(f"{name} is expected to be {kind}.")
        if len(inner) > RICH_TEXT_ITEMS_MAX:
            raise _Invalid(
                f"body failed validation: {where}.length should be ≤ `{RICH_TEXT_ITEMS_MAX}`, "
                f"instead was `{len(inner)}`."
            )
        items: list[JSON] = []
        for i, item in enumerate(inner):
            text = item.get("text") if isinstance(item, dict) else None
            if not isinstance(text, dict):
                raise _Invalid(
                    f"body failed validation: {where}[{i}].text should be defined, "
                    "instead was `undefined`."
                )
            content = text.get("content")
            if not isinstance(content, str):
                raise _Invalid(
                    f"body failed validation: {where}[{i}].text.content should be a string, "
                    f"instead was `{json.dumps(content)}`."
                )
            if utf16_len(content) > TEXT_MAX:
                raise _Invalid(
                    f"body failed validation: {where}[{i}].text.content.length should be "
                    f"≤ `{TEXT_MAX}`, instead was `{utf16_len(content)}`."
                )
            link = text.get("link")
            if link is not None:
                url = link.get("url") if isinstance(link, dict) else None
                if not isinstance(url, str) or not url:
                    raise _Invalid(f"body failed validation: {where}[{i}].text.link.url invalid.")
                if utf16_len(url) > TEXT_MAX:
                    raise _Invalid(
                        f"body failed validation: {where}[{i}].text.link.url.length should be "
                        f"≤ `{TEXT_MAX}`, instead was `{utf16_len(url)}`."
                    )
            annotations = item.get("annotations")
            items.append(
                _rich_text(content, link, annotations if isinstance(annotations, dict) else None)
            )
        return items

    @staticmethod
    def _parse_select(source: DataSource, name: str, inner: Any, where: str) -> JSON | None:
        if inner is None:
            return None
        if not isinstance(inner, dict):
            raise _Invalid(f"{name} is expected to be select.")
        option_name = inner.get("name")
        option_id = inner.get("id")
        if option_name is None and option_id is None:
            raise _Invalid(
                f"body failed validation: {where}.name should be defined, instead was `undefined`."
            )
        if option_name is not None:
            if not isinstance(option_name, str):
                raise _Invalid(f"{name} is expected to be select.")
            if utf16_len(option_name) > SELECT_NAME_MAX:
                raise _Invalid(
                    f"body failed validation: {where}.name.length should be ≤ "
                    f"`{SELECT_NAME_MAX}`, instead was `{utf16_len(option_name)}`."
                )
            if "," in option_name:
                raise _Invalid(f"Invalid select option, commas not allowed: {option_name}")
        option = source.option(name, option_name, option_id)
        if option is None:
            raise _Invalid(f"Invalid select option id: {option_id}")
        return {"id": option["id"], "name": option["name"], "color": option["color"]}

    @staticmethod
    def _parse_date(name: str, inner: Any, where: str) -> JSON | None:
        if inner is None:
            return None
        if not isinstance(inner, dict):
            raise _Invalid(f"{name} is expected to be date.")
        for key in ("start", "end"):
            value = inner.get(key)
            if value is None and key == "end":
                continue
            if not isinstance(value, str) or not _iso(value):
                raise _Invalid(
                    f"body failed validation: {where}.{key} should be a valid ISO 8601 date "
                    f"string, instead was `{json.dumps(value)}`."
                )
        return {
            "start": inner["start"],
            "end": inner.get("end"),
            "time_zone": inner.get("time_zone"),
        }

    # handlers ----------------------------------------------------------------------------

    async def _unknown(self, request: web.Request) -> web.Response:
        index, _, refused = await self._begin(request)
        if refused is not None:
            return refused
        return self._error(index, 400, "invalid_request_url", "Invalid request URL.")

    async def _users_me(self, request: web.Request) -> web.Response:
        index, _, refused = await self._begin(request)
        return refused or self._answer(index, self._bot())

    async def _data_source(self, request: web.Request) -> web.Response:
        index, _, refused = await self._begin(request)
        if refused is not None:
            return refused
        try:
            source = self._source(request.match_info["id"])
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)
        return self._answer(index, self._data_source_object(source))

    async def _query(self, request: web.Request) -> web.Response:
        index, body, refused = await self._begin(request)
        if refused is not None:
            return refused
        channel = canonical_id(request.match_info["id"]) or ""
        refused = self._refusal(index, "data_sources.query", channel)
        if refused is not None:
            return refused
        try:
            source = self._source(request.match_info["id"])
            match = self._matcher(source, body.get("filter"))
            size = body.get("page_size", PAGE_SIZE_MAX)
            if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 100:
                raise _Invalid(
                    "body failed validation: body.page_size should be a number between 1 and "
                    f"{PAGE_SIZE_MAX}, instead was `{json.dumps(size)}`."
                )
            found = [p for p in self.pages_in(source.id) if not p.in_trash and match(p)]
            start = 0
            cursor = body.get("start_cursor")
            if cursor is not None:
                ids = [p.id for p in found]
                wanted = canonical_id(cursor) if isinstance(cursor, str) else None
                if wanted not in ids:
                    raise _Invalid(
                        "body failed validation: body.start_cursor should be a valid cursor, "
                        f"instead was `{json.dumps(cursor)}`."
                    )
                start = ids.index(wanted)
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)
        chunk = found[start : start + size]
        rest = found[start + size :]

        def act() -> JSON:
            return {
                "object": "list",
                "results": [self._page_object(p) for p in chunk],
                "next_cursor": rest[0].id if rest else None,
                "has_more": bool(rest),
                "type": "page_or_data_source",
                "page_or_data_source": {},
            }

        return await self._finish(index, "data_sources.query", request, act)

    def _matcher(self, source: DataSource, flt: Any) -> Callable[[Page], bool]:
        if flt is None:
            return lambda page: True
        if not isinstance(flt, dict):
            raise _Invalid("body failed validation: body.filter should be an object.")
        for compound in ("and", "or"):
            if compound in flt:
                parts = flt[compound]
                if not isinstance(parts, list):
                    raise _Invalid(f"body failed validation: body.filter.{compound} invalid.")
                matchers = [self._matcher(source, part) for part in parts]
                combine = all if compound == "and" else any
                return lambda page: combine(m(page) for m in matchers)
        key = flt.get("property")
        name = source.property_named(str(key)) if isinstance(key, str) else None
        if name is None:
            raise _Invalid(f"Could not find property with name or id: {key}")
        kind = source.schema[name]
        conditions = [k for k in flt if k != "property" and k != "type"]
        if len(conditions) != 1 or not isinstance(flt[conditions[0]], dict):
            raise _Invalid("body failed validation: body.filter should hold one condition.")
        filter_kind = conditions[0]
        accepted = {
            "title": ("title", "rich_text"),
            "rich_text": ("rich_text",),
            "select": ("select",),
            "date": ("date",),
        }.get(kind, ())
        if filter_kind not in accepted:
            raise _Invalid(
                "The property type in the database does not match the filter provided: "
                f"database property {kind} does not match filter {filter_kind}"
            )
        condition: JSON = flt[filter_kind]
        if len(condition) != 1:
            raise _Invalid(f"body failed validation: body.filter.{filter_kind} needs one operator.")
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
            raise _Invalid(f"body failed validation: body.filter.{filter_kind}.{op} unsupported.")
        return lambda page: test(page.properties.get(name) or "")

    async def _create_page(self, request: web.Request) -> web.Response:
        index, body, refused = await self._begin(request)
        if refused is not None:
            return refused
        parent = body.get("parent")
        parent_id = ""
        if isinstance(parent, dict):
            parent_id = str(parent.get("data_source_id") or parent.get("database_id") or "")
        refused = self._refusal(index, "pages.create", canonical_id(parent_id) or "")
        if refused is not None:
            return refused
        try:
            source = self._parent(parent)
            values = self._parse_properties(source, body.get("properties", {}))
            markdown = body.get("markdown")
            if markdown is not None and not isinstance(markdown, str):
                raise _Invalid(
                    "body failed validation: body.markdown should be a string, "
                    f"instead was `{json.dumps(markdown)}`."
                )
            for other in ("children", "content"):
                if markdown is not None and body.get(other) is not None:
                    raise _Invalid(
                        f"body failed validation: body.markdown and body.{other} cannot both "
                        "be present."
                    )
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)
        text = markdown or ""
        title_name = source.title_property
        given = values.get(title_name) if title_name is not None else None
        if title_name is not None and not (given and given["title"]):
            lines = text.lstrip("\n").split("\n", 1)
            if lines[0].startswith("# ") and lines[0][2:].strip():
                values[title_name] = {
                    "type": "title",
                    "title": [_rich_text(lines[0][2:].strip())],
                }
                text = lines[1].lstrip("\n") if len(lines) > 1 else ""

        def act() -> JSON:
            return self._page_object(self._new_page(source, values, text))

        return await self._finish(index, "pages.create", request, act)

    def _parent(self, parent: Any) -> DataSource:
        if not isinstance(parent, dict):
            raise _Invalid(
                "body failed validation: body.parent should be defined, instead was `undefined`."
            )
        if parent.get("data_source_id") is not None:
            return self._source(str(parent["data_source_id"]), "data_source_id")
        if parent.get("database_id") is not None:
            db_id = canonical_id(str(parent["database_id"]))
            for source in self.data_sources.values():
                if source.database_id == db_id and source.shared:
                    return source
            raise _not_found("database", db_id or str(parent["database_id"]))
        raise _Invalid(
            "body failed validation: body.parent.data_source_id should be defined, instead was "
            "`undefined`. (the fake Notion takes pages under data sources only)"
        )

    def _new_page(self, source: DataSource, values: dict[str, JSON], markdown: str) -> Page:
        full = {
            name: values.get(name) or {"type": kind, kind: _empty_value(kind)}
            for name, kind in source.schema.items()
        }
        page_id = str(uuid.uuid4())
        stamp = _now()
        page = Page(page_id, source.id, source.database_id, full, markdown, "", stamp, stamp)
        page.url = self._url_of(page)
        self.pages.append(page)
        self._by_id[page_id] = page
        return page

    @staticmethod
    def _url_of(page: Page) -> str:
        slug = _slug(page.title)
        hexid = page.id.replace("-", "")
        return f"https://www.notion.so/{slug}-{hexid}" if slug else f"https://www.notion.so/{hexid}"

    async def _get_page(self, request: web.Request) -> web.Response:
        index, _, refused = await self._begin(request)
        if refused is not None:
            return refused
        try:
            page = self._page(request.match_info["id"])
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)
        return self._answer(index, self._page_object(page))

    async def _update_page(self, request: web.Request) -> web.Response:
        index, body, refused = await self._begin(request)
        if refused is not None:
            return refused
        refused = self._refusal(
            index, "pages.update", self._channel_of_page(request.match_info["id"])
        )
        if refused is not None:
            return refused
        try:
            page = self._page(request.match_info["id"])
            source = self.data_sources[page.data_source_id]
            trash: bool | None = None
            for key in ("in_trash", "archived"):
                if key in body:
                    if not isinstance(body[key], bool):
                        raise _Invalid(
                            f"body failed validation: body.{key} should be a boolean, "
                            f"instead was `{json.dumps(body[key])}`."
                        )
                    trash = body[key]
            values = self._parse_properties(source, body.get("properties", {}))
            if values and page.in_trash and trash is not False:
                raise _Invalid(ARCHIVED_MESSAGE)
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)

        def act() -> JSON:
            if trash is not None:
                page.in_trash = trash
            page.values.update(values)
            page.last_edited_time = _now()
            page.url = self._url_of(page)
            return self._page_object(page)

        return await self._finish(index, "pages.update", request, act)

    async def _get_markdown(self, request: web.Request) -> web.Response:
        index, _, refused = await self._begin(request)
        if refused is not None:
            return refused
        try:
            page = self._page(request.match_info["id"])
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)
        return self._answer(index, self._markdown_object(page))

    async def _update_markdown(self, request: web.Request) -> web.Response:
        index, body, refused = await self._begin(request)
        if refused is not None:
            return refused
        channel = self._channel_of_page(request.match_info["id"])
        refused = self._refusal(index, "pages.update_markdown", channel)
        if refused is not None:
            return refused
        try:
            page = self._page(request.match_info["id"])
            if page.in_trash:
                raise _Invalid(ARCHIVED_MESSAGE)
            new = _edited(page.markdown, body)
        except _Invalid as exc:
            return self._error(index, exc.status, exc.code, exc.message)

        def act() -> JSON:
            page.history.append(page.markdown)
            page.markdown = new
            page.last_edited_time = _now()
            return self._markdown_object(page)

        return await self._finish(index, "pages.update_markdown", request, act)


def _iso(value: str) -> bool:
    try:
        if len(value) == 10:
            date.fromisoformat(value)
        else:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _edited(markdown: str, body: JSON) -> str:
    """The page's markdown after a `PATCH /v1/pages/{id}/markdown` body; _Invalid if wrong."""
    kind = body.get("type")
    command = body.get(kind) if isinstance(kind, str) else None
    if kind not in ("replace_content", "insert_content") or not isinstance(command, dict):
        raise _Invalid(
            "body failed validation: body.type should be `replace_content` or `insert_content` "
            f"(the ones the fake Notion speaks), instead was `{json.dumps(kind)}`."
        )
    if kind == "replace_content":
        new = command.get("new_str")
        if not isinstance(new, str):
            raise _Invalid(
                "body failed validation: body.replace_content.new_str should be a string, "
                f"instead was `{json.dumps(new)}`."
            )
        return new
    content = command.get("content")
    if not isinstance(content, str):
        raise _Invalid(
            "body failed validation: body.insert_content.content should be a string, "
            f"instead was `{json.dumps(content)}`."
        )
    after = command.get("after")
    if isinstance(after, str):
        head, _, tail = after.partition("...")
        begin = markdown.find(head)
        end = markdown.find(tail, begin + len(head)) if begin >= 0 else -1
        if begin < 0 or end < 0:
            raise _Invalid(f"Could not find the selection to insert after: {after}")
        cut = end + len(tail)
        return markdown[:cut] + content + markdown[cut:]
    position = command.get("position")
    where = position.get("type") if isinstance(position, dict) else "end"
    if where == "start":
        return content + markdown
    if where != "end":
        raise _Invalid(
            "body failed validation: body.insert_content.position.type should be `start` or "
            f"`end`, instead was `{json.dumps(where)}`."
        )
    return markdown + content
