"""A delegated task's report in Notion (hub/tasks/runner.py through adapters/notion, the real
notion-client against the fake): one page, with the task and its status as properties, and
the page's link posted once to the conversation that asked."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlmodel import col, select

from adapters.notion import NotionAdapter
from adapters.notion.adapter import address_of
from adapters.web import WebAdapter
from animahub_kit.contract.harness import eventually, free_port, harness_settings
from animahub_kit.fakes.notion_server import FakeNotion
from hub.app import Hub
from hub.model.tool_registry import ToolContext
from hub.store.models import DeliveryRow, TaskState
from tests.conftest import add_demo_animas
from tests.privacy.world import settle

SOURCE = "2a3b4c5d-6e7f-4801-9abc-def012345679"
SCHEMA = {
    "Name": "title",
    "Report ID": "rich_text",
    "Anima": "select",
    "Kind": "select",
    "Status": "select",
    "Task": "rich_text",
}
GENERAL = "web:local/general"


@pytest.fixture
async def fake() -> AsyncIterator[FakeNotion]:
    async with FakeNotion(port=free_port()) as notion:
        notion.add_data_source(SOURCE, "Reports", SCHEMA)
        yield notion


@pytest.fixture
async def hub(home: Path, fake: FakeNotion) -> AsyncIterator[Hub]:
    section = {"enabled": True, "token": fake.token, "api_url": fake.url, "data_source_id": SOURCE}
    instance = Hub(
        harness_settings(home, notion=section),
        adapter_factories={
            "notion": NotionAdapter,
            "web": WebAdapter,
        },
    )
    await instance.start()
    add_demo_animas(instance)
    try:
        yield instance
    finally:
        await instance.stop()


def delivered(hub: Hub, prefix: str) -> list[DeliveryRow]:
    with hub.db.session() as session:
        query = select(DeliveryRow).where(col(DeliveryRow.idempotency_key).startswith(prefix))
        return list(session.exec(query.order_by(col(DeliveryRow.created_at))).all())


async def test_a_task_report_is_one_page_and_its_link_is_posted_where_it_was_asked(
    hub: Hub, fake: FakeNotion
) -> None:
    # The owner's turn: a Notion data source takes no messages, so nobody has written there,
    # and only an admin may name it (hub/tasks/addressing.py); others use the Anima's report_to.
    owner = hub.identity.owner()
    mika = ToolContext("mika", owner.id, owner.is_admin, GENERAL, "UTC", "general", turn="t1")
    arguments = {"to": "kai", "title": "Check the build", "report_to": [str(address_of(SOURCE))]}
    made = await hub.tools.call("delegate_task", json.dumps(arguments), mika)
    assert made.startswith("task 1 for kai")
    (page,) = await eventually(lambda: fake.pages, timeout_s=30)
    assert page.properties["Name"] == "kai's report on task 1: Check the build"
    assert (page.properties["Task"], page.properties["Status"]) == ("1", "done")
    assert page.properties["Anima"] == "kai" and page.properties["Kind"] == "report"
    link = f"https://www.notion.so/{page.id.replace('-', '')}"
    (posted,) = await eventually(lambda: delivered(hub, "task:1:link"), timeout_s=30)
    assert posted.address == GENERAL and posted.text.endswith(f"is in Notion: {link}")
    await settle(hub)
    reports = [d.address for d in delivered(hub, "task:1>")]
    assert sorted(reports) == sorted([GENERAL, str(address_of(SOURCE))])
    assert len(fake.pages) == 1 and hub.tasks.get(1).state is TaskState.DONE
