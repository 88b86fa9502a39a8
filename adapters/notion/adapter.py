"""The Notion adapter: each report delivered to `notion:notion/<data source id>` becomes a
page of that data source, through notion-client 3.1 (docs/platforms/notion.md).

Outbound only, behind the outbox like every platform, so a report inherits its retries,
ordering and visible failures. The page is written in Notion's own markdown
(`pages.create(markdown=…)`, API 2025-09-03), not converted to blocks here.

Never a second page for one report: its id (the delivery's idempotency key) is the page's
`Report ID`, and every send looks for that page first. A retry, a restart, or a create
whose answer was lost thus finds the page and replaces its content instead of making
another. A later chunk of a long report is appended to that page unless it already ends
with it. The SDK's own retries are off: a 429's `Retry-After` goes to the outbox as
`RateLimited`, a 5xx or a lost connection as a transient error (safe to retry, by the
above), anything else as permanent.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from notion_client import AsyncClient
from notion_client.errors import HTTPResponseError, RequestTimeoutError

from adapters.notion.pages import Report, Schema, properties, report_filter, title_of
from adapters.notion.settings import NotionSettings
from hub.adapter import (
    Capabilities,
    DeliveryError,
    HubPort,
    PermanentDeliveryError,
    PlatformState,
    PlatformUnauthorized,
    PlatformUnavailable,
    RateLimited,
    TransientDeliveryError,
)
from hub.messages import Address, OutboundChunk

if TYPE_CHECKING:
    from fastapi import APIRouter

log = logging.getLogger(__name__)
_TASK_KEY = re.compile(r"^task:(\d+)(?::(failed|late))?>")
PLATFORM = "notion"
WORKSPACE = "notion"
MAX_TEXT = 100_000  # one report is one page: the outbox splits only what is longer
_DEFAULT_RETRY_S = 1.0  # Notion's 429 without Retry-After: its ~3 requests/s budget
T = TypeVar("T")


def address_of(data_source_id: str) -> Address:
    """Where reports to a data source go: `notion:notion/<data source id>`."""
    return Address(PLATFORM, WORKSPACE, data_source_id)


class NotionAdapter:
    name = PLATFORM
    capabilities = Capabilities(max_text=MAX_TEXT)

    def __init__(self, settings: NotionSettings) -> None:
        self._settings = settings
        self._client: AsyncClient | None = None
        self._schemas: dict[str, Schema] = {}
        self._hub: HubPort | None = None

    async def start(self, hub: HubPort) -> None:
        token = self._settings.token
        assert token is not None  # NotionSettings requires it when enabled
        client = AsyncClient(
            auth=token.get_secret_value(),
            base_url=self._settings.api_url,
            timeout_ms=int(self._settings.timeout_s * 1000),
            retry=False,  # the outbox retries, honouring Retry-After
            logger=log,
        )
        source = self._settings.data_source_id
        try:
            await _started(client.users.me(), source)
            self._schemas = {source: await self._schema(client, source)}
        except BaseException:  # nothing half-open: the hub calls start again later
            await client.aclose()
            raise
        self._client, self._hub = client, hub
        log.info("Notion connected: reports go to data source %s", self._settings.data_source_id)

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        self._client = self._hub = None

    def render(self, markdown: str) -> str:
        return markdown  # Notion reads markdown itself

    async def send(self, chunk: OutboundChunk) -> str:
        client = self._client
        if client is None:
            raise TransientDeliveryError("the Notion adapter is not started")
        source = chunk.address.channel
        schema = self._schemas.get(source) or await self._schema_of(client, source)
        report_id = _report_id(chunk)
        found = await self._call(
            "query",
            lambda: client.data_sources.query(source, filter=report_filter(report_id), page_size=1),
        )
        page = next(iter(found.get("results") or []), None)
        if chunk.index > 0:
            if page is None:  # its first chunk made none: nothing to append to
                raise PermanentDeliveryError(f"no page for report {report_id} to append to")
            return await self._append(client, str(page["id"]), chunk.text)
        shown = properties(schema, _report(chunk, report_id))
        if page is None:
            created = await self._call(
                "page create",
                lambda: client.pages.create(
                    parent={"type": "data_source_id", "data_source_id": source},
                    properties=shown,
                    markdown=chunk.text,
                ),
            )
            log.info("report %s published: %s", report_id, created.get("url") or created["id"])
            return str(created["id"])
        page_id = str(page["id"])
        log.info("report %s was published before (%s): updating it", report_id, page_id)
        await self._replace(client, page_id, chunk.text)
        await self._call("page update", lambda: client.pages.update(page_id, properties=shown))
        return page_id

    async def edit(self, address: Address, message_id: str, text: str) -> None:
        client = self._client
        if client is None:
            raise TransientDeliveryError("the Notion adapter is not started")
        await self._replace(client, message_id, text)

    def routers(self) -> Sequence[APIRouter]:
        return []

    def link(self, address: Address, message_id: str) -> str | None:
        """The page's URL (Notion's form: the id without dashes)."""
        return f"https://www.notion.so/{message_id.replace('-', '')}" if message_id else None

    # ------------------------------------------------------------------------------------

    async def _schema(self, client: AsyncClient, source: str) -> Schema:
        """The data source's schema; a start that cannot publish there says why."""
        found = await _started(client.data_sources.retrieve(source), source)
        try:
            return Schema.of(found)
        except ValueError as exc:
            raise PlatformUnauthorized(f"Notion data source {source}: {exc}") from exc

    async def _schema_of(self, client: AsyncClient, source: str) -> Schema:
        """A data source other than the configured one, named by a report's address."""
        try:
            schema = await self._schema(client, source)
        except PlatformUnauthorized as exc:
            raise PermanentDeliveryError(exc.reason) from exc
        except PlatformUnavailable as exc:
            raise TransientDeliveryError(exc.reason) from exc
        self._schemas[source] = schema
        return schema

    async def _replace(self, client: AsyncClient, page_id: str, text: str) -> None:
        await self._call(
            "page content",
            lambda: client.pages.update_markdown(
                page_id, type="replace_content", replace_content={"new_str": text}
            ),
        )

    async def _append(self, client: AsyncClient, page_id: str, text: str) -> str:
        current = await self._call("page read", lambda: client.pages.retrieve_markdown(page_id))
        if str(current.get("markdown") or "").rstrip().endswith(text.rstrip()):
            return page_id  # appended before the answer was lost
        await self._call(
            "page append",
            lambda: client.pages.update_markdown(
                page_id, type="insert_content", insert_content={"content": text}
            ),
        )
        return page_id

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """One API call, its failure as the outbox's DeliveryError."""
        try:
            return await call()
        except DeliveryError:
            raise
        except HTTPResponseError as exc:
            raise self._failure(what, exc) from exc
        except (httpx.HTTPError, RequestTimeoutError) as exc:
            # Safe to retry: the page is looked for before it is made again.
            raise TransientDeliveryError(f"Notion {what}: {exc or type(exc).__name__}") from exc

    def _failure(self, what: str, exc: HTTPResponseError) -> DeliveryError:
        if exc.status == 429:
            return RateLimited(_retry_after(exc.headers), f"Notion {what}: rate limited")
        if exc.status >= 500:
            return TransientDeliveryError(f"Notion {what}: {exc.status} {exc.code}")
        if exc.status == 401 and self._hub is not None:
            self._hub.report(PLATFORM, PlatformState.UNAUTHORIZED, "Notion refused notion.token")
        return PermanentDeliveryError(f"Notion {what}: {exc.status} {exc.code}: {exc}")


def _report_id(chunk: OutboundChunk) -> str:
    """The delivery's key (the outbox names chunks `<key>:<index>`)."""
    key, _, index = chunk.idempotency_key.rpartition(":")
    return key if key and index == str(chunk.index) else chunk.idempotency_key


def _report(chunk: OutboundChunk, report_id: str) -> Report:
    day = datetime.now(UTC).date().isoformat()
    task = _TASK_KEY.match(report_id)  # a task's report (hub/tasks/runner.py keys them)
    status = (task.group(2) or "done") if task else "published"
    return Report(
        report_id,
        title_of(chunk.text),
        chunk.anima,
        day,
        chunk.kind.value,
        status,
        task.group(1) if task else "",
    )


async def _started(call: Awaitable[Any], source: str) -> Any:
    """A call of `start()`: its failure as PlatformUnauthorized (a person must act) or
    PlatformUnavailable (the hub tries again)."""
    try:
        return await call
    except HTTPResponseError as exc:
        if exc.status in (401, 403, 404):
            raise PlatformUnauthorized(_refusal(exc, source)) from exc
        raise PlatformUnavailable(f"Notion answered {exc.status}: {exc}") from exc
    except (httpx.HTTPError, RequestTimeoutError) as exc:
        raise PlatformUnavailable(f"Notion cannot be reached: {exc}") from exc


def _refusal(exc: HTTPResponseError, source: str) -> str:
    if exc.status == 401:
        return "Notion refused notion.token (check the integration's secret)"
    return (
        f"Notion data source {source} is not shared with the integration, or does not "
        "exist: open the database, ••• > Connections, and add the integration"
    )


def _retry_after(headers: Any) -> float:
    try:
        return max(0.0, float(headers.get("retry-after")))
    except (AttributeError, TypeError, ValueError):
        return _DEFAULT_RETRY_S
