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
``Retry-After`` in whole seconds), :attr:`FakeNotion.faults` (animahub_kit/fakes/faults.py, asked
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

from collections.abc import Mapping

from aiohttp import web

from animahub_kit.fakes.faults import FaultPolicy
from animahub_kit.fakes.listener import Listener, Served
from animahub_kit.fakes.notion.data_sources import PAGE_SIZE_MAX, DataSourceHandlers
from animahub_kit.fakes.notion.errors import SHARE_HINT
from animahub_kit.fakes.notion.model import JSON, DataSource, Page, Plain, canonical_id, utf16_len
from animahub_kit.fakes.notion.pages import ARCHIVED_MESSAGE, PageHandlers
from animahub_kit.fakes.notion.properties import (
    RICH_TEXT_ITEMS_MAX,
    SELECT_NAME_MAX,
    TEXT_MAX,
    WRITABLE,
)
from animahub_kit.fakes.notion.users import UserHandlers
from animahub_kit.fakes.notion.wire import (
    AUTH_MESSAGE,
    RATE_MESSAGE,
    VERSION_MESSAGE,
    ApiCall,
    Kind,
    Limit,
    Wire,
)
from animahub_kit.fakes.notion.workspace import Workspace, known_id

__all__ = [  # what this module offered before the fake was split (animahub_kit/fakes/notion/)
    "ARCHIVED_MESSAGE",
    "AUTH_MESSAGE",
    "JSON",
    "PAGE_SIZE_MAX",
    "RATE_MESSAGE",
    "RICH_TEXT_ITEMS_MAX",
    "SELECT_NAME_MAX",
    "SHARE_HINT",
    "TEXT_MAX",
    "VERSION_MESSAGE",
    "WRITABLE",
    "ApiCall",
    "DataSource",
    "FakeNotion",
    "Kind",
    "Page",
    "Plain",
    "canonical_id",
    "utf16_len",
]


class FakeNotion(Served):
    """The server: its routes, wired to the handlers of each resource (animahub_kit/fakes/notion/),
    which share the workspace (data sources, pages) and the wire (calls, token, faults)."""

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
        self._listener = Listener(port)
        self._workspace = Workspace(bot_id, bot_name, workspace_name)
        self._wire = Wire(token, fault_queries)
        self._users = UserHandlers(self._workspace, self._wire)
        self._data_sources = DataSourceHandlers(self._workspace, self._wire)
        self._pages = PageHandlers(self._workspace, self._wire)

    # lifecycle ---------------------------------------------------------------------------

    async def start(self) -> FakeNotion:
        app = web.Application()
        app.router.add_get("/v1/users/me", self._users.me)
        app.router.add_get("/v1/data_sources/{id}", self._data_sources.get)
        app.router.add_post("/v1/data_sources/{id}/query", self._data_sources.query)
        app.router.add_post("/v1/pages", self._pages.create)
        app.router.add_get("/v1/pages/{id}", self._pages.get)
        app.router.add_patch("/v1/pages/{id}", self._pages.update)
        app.router.add_get("/v1/pages/{id}/markdown", self._pages.get_markdown)
        app.router.add_patch("/v1/pages/{id}/markdown", self._pages.update_markdown)
        app.router.add_route("*", "/{tail:.*}", self._wire.unknown)
        await self._listener.serve(app)
        return self

    async def stop(self) -> None:
        await self._listener.close()

    @property
    def url(self) -> str:
        """The SDK's `base_url` (it adds `/v1/` itself)."""
        return self._listener.url

    # settings ----------------------------------------------------------------------------

    @property
    def token(self) -> str:
        """The integration's token; set it to something else to revoke the integration."""
        return self._wire.token

    @token.setter
    def token(self, token: str) -> None:
        self._wire.token = token

    @property
    def fault_queries(self) -> bool:
        """data_sources.query is faulted like a write."""
        return self._wire.fault_queries

    @fault_queries.setter
    def fault_queries(self, fault_queries: bool) -> None:
        self._wire.fault_queries = fault_queries

    @property
    def faults(self) -> FaultPolicy | None:
        """Consulted for every write (animahub_kit/fakes/faults.py); None: no faults."""
        return self._wire.faults

    @faults.setter
    def faults(self, faults: FaultPolicy | None) -> None:
        self._wire.faults = faults

    @property
    def bot_id(self) -> str:
        return self._workspace.bot_id

    @bot_id.setter
    def bot_id(self, bot_id: str) -> None:
        self._workspace.bot_id = bot_id

    @property
    def bot_name(self) -> str:
        return self._workspace.bot_name

    @bot_name.setter
    def bot_name(self, bot_name: str) -> None:
        self._workspace.bot_name = bot_name

    @property
    def workspace_name(self) -> str:
        return self._workspace.workspace_name

    @workspace_name.setter
    def workspace_name(self, workspace_name: str) -> None:
        self._workspace.workspace_name = workspace_name

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
        return self._workspace.add_data_source(
            id, title, properties, share=share, database_id=database_id
        )

    def set_shared(self, data_source_id: str, shared: bool = True) -> None:
        """Share the data source with the integration, or take the connection away."""
        self.data_sources[known_id(data_source_id)].shared = shared

    def add_page(
        self, data_source_id: str, properties: Mapping[str, str | None], markdown: str = ""
    ) -> Page:
        """A page that is already there (made by someone, or by an earlier run), from plain
        values: text for title and rich text, a start for a date, a name for a select."""
        return self._workspace.add_page(data_source_id, properties, markdown)

    # fault injection ---------------------------------------------------------------------

    def rate_limit(self, times: int = 1, retry_after: float = 1.0) -> None:
        """Answer the next `times` writes 429 with `Retry-After` (whole seconds, rounded up)."""
        self._wire.limits.append(Limit(times, retry_after))

    def fail_next(self, status: int = 503, *, carried_out: bool = False) -> None:
        """Answer the next valid write `status`; `carried_out`: after doing it."""
        self._wire.failing.append((status, carried_out))

    def drop_next_response(self, kind: Kind = "pages.create") -> None:
        """Carry out the next `kind` request and record it, then close without answering."""
        self._wire.drops.append(kind)

    # what the fake saw -------------------------------------------------------------------

    @property
    def data_sources(self) -> dict[str, DataSource]:
        return self._workspace.data_sources

    @property
    def pages(self) -> list[Page]:
        """Every page, in creation order."""
        return self._workspace.pages

    @property
    def calls(self) -> list[ApiCall]:
        return self._wire.calls

    @property
    def notion_versions(self) -> set[str]:
        """The `Notion-Version` headers the requests carried."""
        return self._wire.notion_versions

    def pages_in(self, data_source_id: str) -> list[Page]:
        return self._workspace.pages_in(data_source_id)

    def page(self, page_id: str) -> Page:
        return self._workspace.by_id[known_id(page_id)]

    def calls_to(self, path_prefix: str, method: str | None = None) -> list[ApiCall]:
        """Requests whose path starts with `path_prefix` (e.g. "/v1/pages"), of `method`."""
        return [
            c
            for c in self.calls
            if c.path.startswith(path_prefix) and (method is None or c.method == method.upper())
        ]

    def requests_to(self, path_prefix: str, method: str | None = None) -> int:
        return len(self.calls_to(path_prefix, method))
