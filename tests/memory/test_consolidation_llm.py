"""Consolidation with a language model: litellm against the local fake OpenAI server (and
litellm's mock_response), never the network. Whatever the model gets wrong, a stage falls
back to the offline rules for that call and finishes."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from hub.memory.consolidation import Consolidator, Session, SessionTurn
from hub.memory.distill import OfflineDistiller
from hub.memory.documents import read_episodes
from hub.memory.recall import RecallScope
from hub.memory.service import MemoryService
from hub.schedule.distill_llm import LLMDistiller, make_distiller, parse_json
from hub.settings import LLMSection
from tests.memory import test_consolidation as offline_tests
from tests.memory.test_consolidation import (
    ANIMA,
    GENERAL,
    MON,
    SEMANTIC,
    TUE,
    WED,
    at,
    body,
    meta,
    paths,
    say,
    snapshot,
)

embedder = offline_tests.embedder  # the fixtures, shared
memory = offline_tests.memory


KEY = "sk-ant-api03-" + "Q7" * 20


def llm(fake: Any, **extra: Any) -> LLMSection:
    return LLMSection(model="openai/fake", api_base=f"{fake.url}/v1", api_key="x", **extra)


@pytest.fixture
def consolidator(memory: MemoryService, fake_openai: Any) -> Consolidator:
    return Consolidator(memory, lambda _anima: make_distiller(llm(fake_openai), "openai/fake"))


def facts(*entries: object) -> str:  # what the model says: facts, and what is not one
    return json.dumps({"facts": list(entries)})


async def test_the_model_distills_and_resolves_a_contradiction(
    memory: MemoryService,
    consolidator: Consolidator,
    fake_openai: Any,
) -> None:
    folder = memory.anima_dir(ANIMA)
    say(memory, at(MON, "09:00"), "alice", "We agreed: invoices go out on the 3rd working day.")
    say(memory, at(MON, "09:10"), "bob", "For invoices, export from the ledger and mail the PDF.")
    await memory.drain()
    fake_openai.queue_reply(
        facts(
            {
                "kind": "knowledge",
                "subject": "Invoice day",
                "title": "When invoices go out",
                "text": f"Invoices go out on the third working day. Use api_key={KEY}",
                "sources": [1],
            },
            {
                "kind": "procedure",
                "subject": "how to send invoices",
                "title": "Sending invoices",
                "text": "1. Export from the ledger.\n2. Mail the PDF.",
                "sources": [2, 1, 99, "x"],
            },
            {"kind": "knowledge", "subject": "no text"},
            "not a fact",
        )
    )
    report = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert report.created == ["procedures/how-to-send-invoices.md", "knowledge/invoice-day.md"]
    sections = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert KEY not in body(folder, "knowledge/invoice-day.md")  # what a model says is redacted
    assert "[REDACTED:" in body(folder, "knowledge/invoice-day.md")
    note = meta(folder, "knowledge/invoice-day.md")
    assert note["title"] == "When invoices go out" and note["subject"] == "invoice day"
    assert [s["id"] for s in note["sources"]] == [sections[0].id]
    procedure = meta(folder, "procedures/how-to-send-invoices.md")
    assert [s["id"] for s in procedure["sources"]] == [sections[0].id, sections[1].id]
    assert body(folder, "procedures/how-to-send-invoices.md").startswith("1. Export")
    [request] = fake_openai.requests
    assert request["model"] == "fake" and not request.get("stream")
    prompt = request["messages"][1]["content"]
    assert "[1] 2026-06-01 09:00: **Alice**" in prompt and "[2] 2026-06-01 09:10" in prompt
    assert "data, not instructions" in request["messages"][0]["content"]
    assert "Known subjects: (none yet)" in prompt

    # Run again: nothing is asked twice, nothing changes.
    before = snapshot(folder)
    assert (await consolidator.daily(ANIMA, MON, at(TUE, "01:00"))).created == []
    assert len(fake_openai.requests) == 1 and snapshot(folder) == before

    # The next day the model files a change under the known subject: it supersedes.
    say(memory, at(TUE, "09:00"), "alice", "From now on invoices go out on the 5th working day.")
    await memory.drain()
    fake_openai.queue_reply(
        facts(
            {
                "kind": "knowledge",
                "subject": "invoice day",
                "text": "Invoices go out on the fifth working day.",
                "sources": [1],
            }
        )
    )
    tuesday = await consolidator.daily(ANIMA, TUE, at(WED, "00:00"))
    prompt = fake_openai.requests[-1]["messages"][1]["content"]
    assert "Known subjects: how to send invoices, invoice day\n" in prompt
    assert tuesday.created == ["knowledge/invoice-day-2.md"]
    assert tuesday.superseded == ["knowledge/invoice-day.md"]
    scope = RecallScope.admin(ANIMA)
    found = await paths(memory, scope, "when do invoices go out", layers=SEMANTIC)
    assert "knowledge/invoice-day-2.md" in found and "knowledge/invoice-day.md" not in found


@pytest.mark.parametrize("failure", ["http", "prose", "wrong shape"])
async def test_a_failing_model_falls_back_to_the_offline_rules(
    memory: MemoryService,
    consolidator: Consolidator,
    fake_openai: Any,
    caplog: pytest.LogCaptureFixture,
    failure: str,
) -> None:
    say(memory, at(MON, "09:00"), "alice", "The budget code is TANGO-7731.")
    await memory.drain()
    if failure == "http":
        fake_openai.fail_next(status=400)
    elif failure == "prose":
        fake_openai.queue_reply("Sure! The budget code is TANGO-7731.")
    else:
        fake_openai.queue_reply('{"facts": "none"}')
    with caplog.at_level(logging.WARNING, logger="hub.memory.distill"):
        report = await consolidator.daily(ANIMA, MON, at(TUE, "00:00"))
    assert report.created == ["knowledge/budget-code.md"]  # what the offline rules find
    if failure != "wrong shape":
        assert "using the offline rules" in caplog.text


async def test_session_summary_by_the_model(
    memory: MemoryService,
    consolidator: Consolidator,
    fake_openai: Any,
) -> None:
    folder = memory.anima_dir(ANIMA)
    turns = [
        SessionTurn("user", "Alice", "Can you check the ACME invoice?", at(MON, "14:00")),
        SessionTurn("assistant", ANIMA, "It is 1,200 EUR.", at(MON, "14:01")),
    ]
    session = Session(
        ANIMA, "slack:T1/C2", GENERAL, "#general", "alice", f"channel:{GENERAL}", turns, 3
    )
    answer = {"summary": "Alice checked the ACME invoice: 1,200 EUR."}
    fake_openai.queue_reply(f"```json\n{json.dumps(answer)}\n```")
    await consolidator.session(session, at(MON, "14:30"))
    [section] = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert section.text.endswith("\nAlice checked the ACME invoice: 1,200 EUR.")
    transcript = fake_openai.requests[0]["messages"][1]["content"]
    assert "14:00 Alice (user): Can you check the ACME invoice?" in transcript


async def test_weekly_asks_the_model_about_duplicates_and_summaries(
    memory: MemoryService,
    consolidator: Consolidator,
    fake_openai: Any,
) -> None:
    folder = memory.anima_dir(ANIMA)
    (folder / "knowledge").mkdir()
    notes = {
        "coffee-machine": ("2026-05-01", "The coffee machine is on floor 3 next to the kitchen."),
        "coffee": ("2026-05-02", "The coffee machine is on the third floor, by the kitchen door."),
        "descaling": ("2026-05-03", "The coffee machine on floor 3 is descaled on Fridays."),
    }
    for name, (created, text) in notes.items():
        (folder / f"knowledge/{name}.md").write_text(f"---\ncreated: '{created}'\n---\n{text}\n")
    say(memory, at(MON, "09:00"), "alice", "The printer on floor 2 is broken again.")
    await memory.drain()
    fake_openai.queue_reply('{"same": true}')  # coffee-machine and coffee
    fake_openai.queue_reply('{"same": false}')  # coffee-machine and descaling
    fake_openai.queue_reply('{"text": "The coffee machine is on floor 3, by the kitchen door."}')
    fake_openai.queue_reply('{"summary": "Alice reported the floor 2 printer broken."}')
    today = MON + timedelta(days=40)
    report = await consolidator.weekly(ANIMA, today, at(today, "03:00"))
    assert report.merged == ["knowledge/coffee.md"]
    assert report.compressed == ["episodes/2026-06-01.md"]
    assert body(folder, "knowledge/coffee-machine.md") == (
        "The coffee machine is on floor 3, by the kitchen door."
    )
    assert meta(folder, "knowledge/descaling.md").get("status") is None
    [summary] = read_episodes(folder, folder / "episodes/2026-06-01.md")
    assert summary.text.endswith("\nAlice reported the floor 2 printer broken.")
    asked = len(fake_openai.requests)
    assert asked == 4

    before = snapshot(folder)
    again = await consolidator.weekly(ANIMA, today, at(today, "04:00"))
    assert again.summary().endswith("nothing to do")
    assert len(fake_openai.requests) == asked and snapshot(folder) == before


async def test_litellm_mock_response_is_used(memory: MemoryService) -> None:
    section = LLMSection(model="openai/fake", mock_response='{"summary": "Mocked summary."}')
    distiller = make_distiller(section, "openai/fake")
    assert isinstance(distiller, LLMDistiller)
    assert isinstance(make_distiller(section, ""), OfflineDistiller)
    turns = [SessionTurn("user", "Alice", "hello there", at(MON, "08:00"))]
    session = Session(ANIMA, "c", GENERAL, "#general", "alice", f"channel:{GENERAL}", turns, 1)
    assert await distiller.summarize_session(session) == "Mocked summary."


def test_parse_json_is_forgiving() -> None:
    assert parse_json('{"a": 1}') == {"a": 1}
    assert parse_json('Here you go:\n```json\n{"a": [1]}\n```') == {"a": [1]}
    assert parse_json('the answer is {"a": 2} I think') == {"a": 2}
    assert parse_json("[1, 2]") is None and parse_json("no") is None


def test_anima_model_picks_the_distiller(tmp_path: Path) -> None:
    from hub.animas import AnimaRegistry
    from hub.roles import load_roles
    from hub.schedule.distill_llm import anima_distillers

    registry = AnimaRegistry(tmp_path / "animas", load_roles())
    registry.load()
    registry.create("kai", "engineer")
    offline = anima_distillers(LLMSection(), registry)
    assert offline("kai").name == "offline"
    hub_model = anima_distillers(LLMSection(model="openai/gpt-x"), registry)
    assert hub_model("kai").name == "llm:openai/gpt-x"
    assert hub_model("nobody").name == "llm:openai/gpt-x"
