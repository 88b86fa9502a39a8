"""The Notion adapter (adapters/notion) through the hub's outbox, with the real notion-client
against animahub_kit/fakes/notion_server.py: a report becomes one page with its properties and
markdown; a create whose answer was lost, a 5xx after the write, a resend after a restart
never make a second page; a 429's Retry-After is waited out; a long report is one page; a
wrong token, a database not shared and one without `Report ID` are named at start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import col

from adapters.notion import NotionAdapter
from adapters.notion.adapter import address_of
from animahub_kit.contract.harness import eventually, free_port, harness_settings
from animahub_kit.fakes.notion_server import FakeNotion
from hub.adapter import PlatformState
from hub.app import Hub
from hub.clock import ManualClock
from hub.messages import DeliveryKind
from hub.store.models import DeliveryRow
from tests.conftest import add_demo_animas
from tests.contract.test_previews import RefuseFirst
from tests.privacy.world import settle
from tests.schedule.test_platform_posts import run_the_schedule, write_crons

SOURCE = "1f2e3d4c-5b6a-4789-8abc-def012345678"
SCHEMA = {
    "Name": "title",
    "Report ID": "rich_text",
    "Anima": "select",
    "Date": "date",
    "Kind": "select",
    "Status": "select",
}
REPORT = "# Weekly digest\n\n- shipped the beta\n- **next**: the docs\n"


@pytest.fixture
async def fake() -> AsyncIterator[FakeNotion]:
    async with FakeNotion(port=free_port()) as notion:
        notion.add_data_source(SOURCE, "Reports", SCHEMA)
        yield notion


async def started(home: Path, fake: FakeNotion, **notion: Any) -> Hub:
    section = {
        "enabled": True,
        "token": fake.token,
        "api_url": fake.url,
        "data_source_id": SOURCE,
        **notion,
    }
    hub = Hub(
        harness_settings(home, notion=section),
        adapter_factories={"notion": NotionAdapter},
    )
    await hub.start()
    return hub


@pytest.fixture
async def hub(home: Path, fake: FakeNotion) -> AsyncIterator[Hub]:
    instance = await started(home, fake)
    try:
        yield instance
    finally:
        await instance.stop()


def publish(hub: Hub, text: str = REPORT, key: str = "report:digest:2026-12-01") -> str:
    with hub.db.write() as conn:
        delivery = hub.outbox.enqueue(
            conn, address_of(SOURCE), text, DeliveryKind.REPORT, "mika", key
        )
    return delivery.id


async def settled(hub: Hub, delivery_id: str, status: str = "sent") -> DeliveryRow:
    def row() -> DeliveryRow | None:
        with hub.db.session() as session:
            found = session.get(DeliveryRow, delivery_id)
        return found if found is not None and found.status == status else None

    found: DeliveryRow = await eventually(row, timeout_s=20)
    return found


async def test_a_report_becomes_one_page_with_its_properties_and_markdown(
    hub: Hub, fake: FakeNotion
) -> None:
    row = await settled(hub, publish(hub))
    (page,) = fake.pages
    assert row.message_ids == [page.id]
    assert page.data_source_id.replace("-", "") == SOURCE.replace("-", "")
    assert page.markdown == REPORT  # Notion's markdown, not blocks made here
    assert page.properties["Name"] == "Weekly digest"
    assert page.properties["Report ID"] == "report:digest:2026-12-01"
    assert page.properties["Anima"] == "mika" and page.properties["Kind"] == "report"
    assert page.properties["Status"] == "published" and page.properties["Date"]
    assert fake.notion_versions == {"2025-09-03"}


async def test_a_create_whose_answer_was_lost_is_found_not_made_again(
    hub: Hub, fake: FakeNotion
) -> None:
    fake.drop_next_response()  # carried out, the answer never came
    row = await settled(hub, publish(hub))
    (page,) = fake.pages
    assert row.message_ids == [page.id] and row.attempts >= 1


async def test_a_5xx_after_the_write_and_a_resend_after_a_restart_keep_one_page(
    hub: Hub, fake: FakeNotion
) -> None:
    fake.fail_next(503, carried_out=True)
    delivery_id = publish(hub)
    await settled(hub, delivery_id)
    assert len(fake.pages) == 1
    # The hub died after the page was made, before it recorded so: the delivery is due again.
    with hub.db.write() as conn:
        conn.execute(
            update(DeliveryRow)
            .where(col(DeliveryRow.id) == delivery_id)
            .values(status="pending", message_ids=[], sent_at=None)
        )
    await hub.adapters["notion"].stop()
    await hub.adapters["notion"].start(hub.port)
    hub.outbox.wake()
    row = await settled(hub, delivery_id)
    (page,) = fake.pages
    assert row.message_ids == [page.id]
    assert page.markdown == REPORT


async def test_a_429_is_waited_out_before_anything_more_goes(hub: Hub, fake: FakeNotion) -> None:
    policy = RefuseFirst(times=1, retry_after=1.0)
    fake.faults = policy
    await settled(hub, publish(hub))
    assert len(fake.pages) == 1
    attempts = policy.recorder.attempts
    assert [a.outcome for a in attempts][:2] == ["429", "ok"]
    assert policy.recorder.early_retries() == []  # nothing before its Retry-After


async def test_a_long_report_is_one_page(home: Path, fake: FakeNotion, hub: Hub) -> None:
    long = "\n\n".join(f"Paragraph {n}. " + "word " * 2000 for n in range(12))
    row = await settled(hub, publish(hub, long, key="report:long"))
    assert len(row.chunks) > 1  # the outbox split it
    (page,) = fake.pages
    assert set(row.message_ids) == {page.id}
    assert page.markdown.replace("\n", "").replace(" ", "") == long.replace("\n", "").replace(
        " ", ""
    )


@pytest.mark.parametrize(
    ("shared", "token", "reason"),
    [
        (True, "ntn_wrong", "refused notion.token"),
        (False, None, "not shared with the integration"),
    ],
    ids=["wrong token", "not shared"],
)
async def test_what_a_person_must_fix_is_named_at_start(
    home: Path, fake: FakeNotion, shared: bool, token: str | None, reason: str
) -> None:
    fake.set_shared(SOURCE, shared)
    hub = await started(home, fake, token=token or fake.token)
    try:
        status = hub.platforms.status()["notion"]
        assert status.state is PlatformState.UNAUTHORIZED
        assert reason in status.reason
    finally:
        await hub.stop()


async def test_a_data_source_without_report_id_is_refused_at_start(
    home: Path, fake: FakeNotion
) -> None:
    other = "2f2e3d4c-5b6a-4789-8abc-def012345678"
    fake.add_data_source(other, "Loose", {"Name": "title"})
    hub = await started(home, fake, data_source_id=other)
    try:
        status = hub.platforms.status()["notion"]
        assert status.state is PlatformState.UNAUTHORIZED
        assert "Report ID" in status.reason
    finally:
        await hub.stop()


async def test_a_cron_that_posts_to_notion_publishes_a_page_each_morning(
    hub: Hub, fake: FakeNotion
) -> None:
    add_demo_animas(hub)
    write_crons(
        hub,
        "## Weekly digest\nschedule: 0 7 * * *\ntype: llm\n"
        f"post_to: {address_of(SOURCE)}\nWhat shipped this week.\n",
    )
    clock = ManualClock(datetime(2026, 3, 2, 6, 30, tzinfo=UTC))
    await run_the_schedule(hub, clock)
    (page,) = await eventually(lambda: fake.pages)
    assert "What shipped this week." in page.markdown  # offline: the task as written
    assert page.properties["Anima"] == "kai" and page.properties["Kind"] == "report"
    await run_the_schedule(hub, clock)  # the next morning: a report, and a page, of its own
    await settle(hub)
    first, second = fake.pages
    assert first.properties["Report ID"] != second.properties["Report ID"]
