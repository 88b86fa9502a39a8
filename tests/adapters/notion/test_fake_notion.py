"""The fake Notion (animahub_kit/fakes/notion_server.py), driven by the real notion-client SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from notion_client import APIResponseError, AsyncClient

from animahub_kit.fakes.faults import Fault, RateLimit
from animahub_kit.fakes.notion_server import FakeNotion

DATA_SOURCE = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
SCHEMA = {
    "Name": "title",
    "Anima": "rich_text",
    "Date": "date",
    "Kind": "select",
    "Status": "select",
    "Task": "rich_text",
    "Report ID": "rich_text",
}


@pytest.fixture
async def fake() -> AsyncIterator[FakeNotion]:
    async with FakeNotion() as server:
        server.add_data_source(DATA_SOURCE, "Reports", SCHEMA)
        yield server


@pytest.fixture
async def notion(fake: FakeNotion) -> AsyncIterator[AsyncClient]:
    # notion-client 3.1 has no `max_retries=` keyword: `retry=False` turns its retries off.
    client = AsyncClient(auth=fake.token, base_url=fake.url, retry=False)
    yield client
    await client.aclose()


def text(value: str) -> dict[str, Any]:
    return {"rich_text": [{"type": "text", "text": {"content": value}}]}


def report(report_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "Name": {"title": [{"text": {"content": "Weekly digest"}}]},
        "Anima": text("mika"),
        "Date": {"date": {"start": "2026-03-02"}},
        "Kind": {"select": {"name": "digest"}},
        "Report ID": text(report_id),
        **extra,
    }


async def create(notion: AsyncClient, report_id: str, markdown: str = "Body.") -> Any:
    return await notion.pages.create(
        parent={"type": "data_source_id", "data_source_id": DATA_SOURCE},
        properties=report(report_id),
        markdown=markdown,
    )


async def test_a_page_is_created_read_back_found_and_rewritten(
    fake: FakeNotion, notion: AsyncClient
) -> None:
    me = await notion.users.me()
    assert me["type"] == "bot" and me["bot"]["owner"] == {"type": "workspace", "workspace": True}
    source = await notion.data_sources.retrieve(data_source_id=DATA_SOURCE.replace("-", ""))
    assert source["object"] == "data_source"
    assert source["properties"]["Name"] == {
        "id": "title",
        "name": "Name",
        "description": "",
        "type": "title",
        "title": {},
    }
    assert source["properties"]["Report ID"]["type"] == "rich_text"

    created = await create(notion, "r-1", "# Heading inside\n\nFirst version.")
    assert created["object"] == "page"
    assert created["parent"]["data_source_id"] == DATA_SOURCE
    assert created["url"] == f"https://www.notion.so/Weekly-digest-{created['id'].replace('-', '')}"
    assert created["properties"]["Report ID"]["rich_text"][0]["plain_text"] == "r-1"
    assert created["properties"]["Kind"]["select"]["name"] == "digest"
    assert created["properties"]["Status"] == {
        "id": source["properties"]["Status"]["id"],
        "type": "select",
        "select": None,
    }

    again = await notion.pages.retrieve(page_id=created["id"])
    assert again["properties"] == created["properties"]
    body = await notion.pages.retrieve_markdown(page_id=created["id"])
    assert body["object"] == "page_markdown" and body["truncated"] is False
    assert body["markdown"] == "# Heading inside\n\nFirst version."  # a title was given

    await create(notion, "r-2")
    found = await notion.data_sources.query(
        data_source_id=DATA_SOURCE,
        filter={"property": "Report ID", "rich_text": {"equals": "r-1"}},
    )
    assert [p["id"] for p in found["results"]] == [created["id"]]
    assert found["has_more"] is False and found["type"] == "page_or_data_source"

    replaced = await notion.pages.update_markdown(
        page_id=created["id"],
        type="replace_content",
        replace_content={"new_str": "Second version."},
    )
    assert replaced["markdown"] == "Second version."
    await notion.pages.update(page_id=created["id"], in_trash=True)
    found = await notion.data_sources.query(
        data_source_id=DATA_SOURCE,
        filter={"property": "Report ID", "rich_text": {"equals": "r-1"}},
    )
    assert found["results"] == []

    page = fake.page(created["id"])
    assert page.properties["Report ID"] == "r-1" and page.properties["Date"] == "2026-03-02"
    assert page.markdown == "Second version." and page.history == [
        "# Heading inside\n\nFirst version."
    ]
    assert page.in_trash and fake.pages_in(DATA_SOURCE)[0] is page
    assert fake.notion_versions == {"2025-09-03"}
    assert fake.requests_to("/v1/pages", "POST") == 2


async def test_a_heading_becomes_the_title_when_none_is_given(
    fake: FakeNotion, notion: AsyncClient
) -> None:
    created = await notion.pages.create(
        parent={"data_source_id": DATA_SOURCE},
        properties={"Report ID": text("r-9")},
        markdown="# Daily notes\n\nText.",
    )
    assert created["properties"]["Name"]["title"][0]["plain_text"] == "Daily notes"
    assert fake.pages[0].markdown == "Text."
    with pytest.raises(APIResponseError) as both:
        await notion.pages.create(parent={"data_source_id": DATA_SOURCE}, markdown="x", children=[])
    assert both.value.code == "validation_error"


async def test_429_and_5xx_as_notion_sends_them(fake: FakeNotion, notion: AsyncClient) -> None:
    fake.rate_limit(1, retry_after=1.5)
    with pytest.raises(APIResponseError) as limited:
        await create(notion, "r-1")
    assert limited.value.status == 429 and limited.value.code == "rate_limited"
    assert limited.value.headers["retry-after"] == "2"  # whole seconds, rounded up
    assert fake.pages == []

    fake.fail_next(503, carried_out=True)
    with pytest.raises(APIResponseError) as failed:
        await create(notion, "r-2")
    assert failed.value.status == 503 and failed.value.code == "service_unavailable"
    assert [p.properties["Report ID"] for p in fake.pages] == ["r-2"]

    class Every429:
        def decide(self, platform: str, channel: str, method: str, **_: Any) -> Fault | None:
            seen.append((platform, channel, method))
            return RateLimit(3.0)

    seen: list[tuple[str, str, str]] = []
    fake.faults = Every429()
    with pytest.raises(APIResponseError) as policy:
        await notion.pages.update(page_id=fake.pages[0].id, properties={"Task": text("t")})
    assert policy.value.code == "rate_limited" and policy.value.headers["retry-after"] == "3"
    assert seen == [("notion", DATA_SOURCE, "pages.update")]
    await notion.data_sources.query(data_source_id=DATA_SOURCE)  # queries are not faulted


async def test_refusals_wrong_token_unknown_source_too_long_text(
    fake: FakeNotion, notion: AsyncClient
) -> None:
    wrong = AsyncClient(auth="ntn_not_it", base_url=fake.url, retry=False)
    with pytest.raises(APIResponseError) as unauthorized:
        await wrong.users.me()
    await wrong.aclose()
    assert unauthorized.value.status == 401 and unauthorized.value.code == "unauthorized"
    assert str(unauthorized.value) == "API token is invalid."

    hidden = fake.add_data_source(title="Private", share=False).id
    for data_source_id in (hidden, "0f0e0d0c-0b0a-4090-8070-605040302010"):
        with pytest.raises(APIResponseError) as missing:
            await notion.data_sources.retrieve(data_source_id=data_source_id)
        assert missing.value.status == 404 and missing.value.code == "object_not_found"
        assert f"Could not find data_source with ID: {data_source_id}." in str(missing.value)

    with pytest.raises(APIResponseError) as long_text:
        await notion.pages.create(
            parent={"data_source_id": DATA_SOURCE},
            properties=report("r-1", Task=text("x" * 2001)),
        )
    assert long_text.value.status == 400 and long_text.value.code == "validation_error"
    assert str(long_text.value) == (
        "body failed validation: body.properties.Task.rich_text[0].text.content.length "
        "should be ≤ `2000`, instead was `2001`."
    )
    with pytest.raises(APIResponseError) as astral:  # 1,001 code points, 2,002 UTF-16 units
        await notion.pages.create(
            parent={"data_source_id": DATA_SOURCE}, properties=report("r-1", Task=text("🙂" * 1001))
        )
    assert "instead was `2002`" in str(astral.value)
    with pytest.raises(APIResponseError) as unknown:
        await notion.pages.create(
            parent={"data_source_id": DATA_SOURCE}, properties=report("r-1", Owner=text("x"))
        )
    assert str(unknown.value) == "Owner is not a property that exists."
    with pytest.raises(APIResponseError) as shape:
        await notion.pages.create(
            parent={"data_source_id": DATA_SOURCE},
            properties=report("r-1", Kind=text("digest")),
        )
    assert str(shape.value) == "Kind is expected to be select."
    assert fake.pages == []


async def test_a_dropped_answer_still_made_the_page(fake: FakeNotion, notion: AsyncClient) -> None:
    fake.drop_next_response()
    with pytest.raises(httpx.TransportError):
        await create(notion, "r-1")
    assert [p.properties["Report ID"] for p in fake.pages] == ["r-1"]
    assert fake.calls_to("/v1/pages", "POST")[-1].status == 0
    found = await notion.data_sources.query(
        data_source_id=DATA_SOURCE,
        filter={"property": "Report ID", "rich_text": {"equals": "r-1"}},
    )
    assert [p["id"] for p in found["results"]] == [fake.pages[0].id]
