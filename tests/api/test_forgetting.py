"""What the Animas know about a person, and forgetting it (hub/people/erasure.py,
docs/people.md): `/whoami` counts a person's private memories, `/forget-me confirm` deletes
them from markdown and index with the facts learned and the DM conversations, someone else's
stay, and the audit log says it happened, not what. Through `Hub.receive` and the API, with
memory on and the real embedder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

from animahub_kit.contract.harness import eventually
from hub.app import Hub
from hub.clock import ManualClock
from hub.markdown_files import write_document
from hub.memory.recall import RecallScope
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.people.erasure import FORGOTTEN_TASK
from hub.store.models import AuditEntry, InboxItem, TaskEvent, TaskState, Turn
from hub.tasks.board import NewTask
from tests.api.test_linking import command
from tests.api.test_people import ADMIN, TOKEN, web
from tests.conftest import started_hub

DANA_DM = Address("slack", "T1", "D0DANA", kind=AddressKind.DM)
DANA = PlatformUser("slack", "U0DANA", "Dana")
EVE_DM = Address("slack", "T1", "D0EVE", kind=AddressKind.DM)
EVE = PlatformUser("slack", "U0EVE", "Eve")
_events = iter(range(1, 10_000))


async def memory_hub(home: Path, clock: ManualClock) -> Hub:
    """aria answers DMs, memory on, the API behind TOKEN."""
    return await started_hub(
        home,
        clock,
        hub={"default_anima": "aria"},
        server={"api_token": TOKEN},
        memory={"enabled": True},
    )


@pytest.fixture
async def hub(home: Path) -> AsyncIterator[Hub]:
    instance = await memory_hub(home, ManualClock(datetime(2026, 12, 1, 9, 0, tzinfo=UTC)))
    try:
        yield instance
    finally:
        await instance.stop()


async def tell(hub: Hub, where: Address, who: PlatformUser, text: str) -> None:
    receipt = await hub.port.receive(
        Inbound(event_id=f"f-{next(_events)}", address=where, sender=who, text=text)
    )

    def done() -> bool:
        with hub.db.session() as session:
            row = session.get(InboxItem, receipt.inbox_id)
        return row is not None and row.status == "done"

    await eventually(done)
    assert hub.memory is not None
    await hub.memory.drain()


async def recalled(hub: Hub, who: PlatformUser, where: Address, query: str) -> list[str]:
    assert hub.memory is not None
    person = hub.identity.resolve(who)
    scope = RecallScope("aria", person.id, where.channel_key, True)
    return [r.text for r in await hub.memory.search(scope, query)]


async def test_forget_me_deletes_what_is_private_to_the_person_and_nothing_else(hub: Hub) -> None:
    await tell(hub, DANA_DM, DANA, "my locker code is 4471 and I live in Lisbon")
    await tell(hub, EVE_DM, EVE, "my locker code is 9090")
    hub.memory.profiles.add(  # type: ignore[union-attr]
        hub.identity.resolve(DANA).id,
        "lives in Lisbon",
        "aria",
        datetime(2026, 12, 1).date(),
        private=True,
    )
    dana_id = hub.identity.resolve(DANA).id
    knowledge = hub.settings.home / "animas" / "aria" / "knowledge"
    knowledge.mkdir(parents=True, exist_ok=True)
    retired = knowledge / "dana-locker.md"  # superseded: out of the index, kept on disk
    write_document(retired, {"scope": f"person:{dana_id}", "status": "superseded"}, "4471\n")
    shared = knowledge / "office.md"
    write_document(shared, {"scope": "shared"}, "The office opens at 9.\n")
    whoami = await command(hub, DANA_DM, DANA, "/whoami")
    assert "memories kept private to you: aria 1" in whoami  # the turn she told it in
    asked = await command(hub, DANA_DM, DANA, "/forget-me")
    assert "Send /forget-me confirm" in asked
    assert any("4471" in t for t in await recalled(hub, DANA, DANA_DM, "locker code"))  # not yet

    done = await command(hub, DANA_DM, DANA, "/forget-me confirm")
    assert done.startswith("Forgotten: 1 private memories (aria: 1), ")
    assert "2 DM turns" in done  # her message and the reply, from the turn log
    assert not any("4471" in t for t in await recalled(hub, DANA, DANA_DM, "locker code"))
    assert any("9090" in t for t in await recalled(hub, EVE, EVE_DM, "locker code"))  # Eve's stay
    episodes = "".join(
        p.read_text() for p in (hub.settings.home / "animas" / "aria" / "episodes").glob("*.md")
    )
    assert "4471" not in episodes and "9090" in episodes
    assert not retired.exists() and shared.exists()  # a restore cannot bring it back
    dana = hub.identity.resolve(DANA)
    assert "Lisbon" not in hub.identity.profile_path(dana.id).read_text()
    with hub.db.session() as session:
        turns = session.exec(select(Turn).where(Turn.channel_key == DANA_DM.channel_key)).all()
        texts = [r.text for r in session.exec(select(InboxItem)).all()]
        audit = session.exec(select(AuditEntry).where(AuditEntry.action == "person.forgotten"))
        (entry,) = audit.all()
    assert turns == []
    assert not [t for t in texts if "4471" in t] and [t for t in texts if "9090" in t]
    assert entry.target == dana.id and "4471" not in str(entry.detail)
    assert "memories kept private to you: none" in await command(hub, DANA_DM, DANA, "/whoami")


async def test_about_me_and_forget_over_the_api(hub: Hub) -> None:
    await tell(hub, DANA_DM, DANA, "my locker code is 4471")
    dana = hub.identity.resolve(DANA)
    profiles = hub.memory.profiles  # type: ignore[union-attr]
    profiles.add(dana.id, "lives in Lisbon", "aria", datetime(2026, 12, 1).date(), private=True)
    async with web(hub) as client:
        made = await client.post("/api/tokens", json={"person": dana.id}, headers=ADMIN)
        own = {"Authorization": f"Bearer {made.json()['token']}"}
        about = await client.get("/api/me/about", headers=own)
        assert about.status_code == 200, about.text
        assert about.json()["private_memories"] == {"aria": 1}
        assert about.json()["id"] == dana.id
        learned = {"anima": "aria", "day": "2026-12-01", "in_dm": True}
        assert about.json()["learned"] == [  # read out of the profile's marker, not shown raw
            {"fact": "my locker code is 4471", **learned},  # what she said of herself
            {"fact": "lives in Lisbon", **learned},
        ]
        refused = await client.post(f"/api/people/{dana.id}/forget", headers=own)
        assert refused.status_code == 403  # forgetting someone else is for admins
        gone = await client.post("/api/me/forget", headers=own)
        assert gone.status_code == 200, gone.text
        assert gone.json()["memories"] == {"aria": 1}
        again = (await client.get("/api/me/about", headers=own)).json()
        assert again["private_memories"] == {}


async def test_forget_me_blanks_the_tasks_asked_for_in_the_dm_and_cancels_open_ones(
    hub: Hub,
) -> None:
    """A task asked for in a DM is a copy of what was said there (issue 41, class 1)."""
    await tell(hub, DANA_DM, DANA, "please have kai check the invoice for IBAN DE4471")
    dana = hub.identity.resolve(DANA)
    asked = hub.tasks.create(
        NewTask(
            "check the invoice for IBAN DE4471",
            "mika",
            "kai",
            details="Dana's IBAN DE4471",
            requested_by=dana.id,
            origin=str(DANA_DM),
        ),
        "mika",
    )
    handed_down = hub.tasks.create(
        NewTask("look up DE4471", "kai", "aria", parent_id=asked.id, origin=f"task:{asked.id}"),
        "kai",
    )
    elsewhere = hub.tasks.create(
        NewTask("plan the offsite", "mika", "kai", origin=str(EVE_DM)), "mika"
    )

    done = await command(hub, DANA_DM, DANA, "/forget-me confirm")

    assert "2 tasks" in done
    for task_id in (asked.id, handed_down.id):
        view = hub.tasks.get(task_id)
        assert view.title == FORGOTTEN_TASK and view.state == TaskState.CANCELLED
        assert "DE4471" not in str(view)
    assert hub.tasks.get(elsewhere.id).title == "plan the offsite"
    with hub.db.session() as session:
        notes = [e.note for e in session.exec(select(TaskEvent)).all()]
    assert not [n for n in notes if "DE4471" in n]
