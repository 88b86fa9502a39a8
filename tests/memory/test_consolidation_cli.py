"""`animahub consolidate` and `animahub memory restore`, in-process (no hub running)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.animas import AnimaRegistry
from hub.cli.main import app
from hub.memory.consolidation import stage_days
from hub.memory.documents import Layer, MemoryItem, append_episode, episode_path, stable_id
from hub.roles import load_roles
from tests.memory.test_memory_cli import WIDE


def test_consolidate_and_restore_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    registry = AnimaRegistry(home / "animas", load_roles())
    registry.load()
    folder = registry.create("aria", "researcher").path
    yesterday, _today = stage_days(datetime.now(UTC), "UTC")
    _said(folder, yesterday, "in-1", "The budget code is TANGO-7731.")
    runner = CliRunner()
    done = runner.invoke(app, ["consolidate", "aria", "--daily", "--monthly"])
    assert done.exit_code == 0, done.output
    assert "aria daily: 1 created" in done.output
    assert "aria monthly: nothing to do" in done.output
    assert "scope: person:alice" in (folder / "knowledge/budget-code.md").read_text()

    nothing = runner.invoke(app, ["consolidate", "aria"])
    assert nothing.exit_code == 2 and "--daily" in nothing.output
    ghost = runner.invoke(app, ["consolidate", "ghost", "--weekly"])
    assert ghost.exit_code == 1 and "no Anima named 'ghost'" in ghost.output

    archived = folder / "archive/forgotten/knowledge/wifi.md"
    archived.parent.mkdir(parents=True)
    archived.write_text("The guest wifi is Guest-5G.\n")
    restored = runner.invoke(app, ["memory", "restore", "aria", "knowledge/wifi.md"])
    assert restored.exit_code == 0, restored.output
    assert "restored knowledge/wifi.md" in restored.output
    assert (folder / "knowledge/wifi.md").exists() and not archived.exists()
    again = runner.invoke(app, ["memory", "restore", "aria", "knowledge/wifi.md"])
    assert again.exit_code == 1 and "no forgotten note" in again.output


def _said(folder: Path, day: date, key: str, text: str) -> None:
    when = datetime.combine(day, time(9, 30), UTC)
    append_episode(
        folder,
        MemoryItem(
            id=stable_id("turn", key),
            layer=Layer.EPISODIC,
            text=f"**Alice** (a DM on web): {text}\n**aria**: Noted.",
            path=episode_path(day),
            scope="person:alice",
            created=when,
            updated=when,
            person="alice",
            channel="web:local/dm:aria:alice",
            section="09:30",
        ),
    )


def test_daily_distils_every_day_not_yet_distilled_and_today_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    registry = AnimaRegistry(tmp_path / "home" / "animas", load_roles())
    registry.load()
    folder = registry.create("aria", "researcher").path
    yesterday, today = stage_days(datetime.now(UTC), "UTC")
    _said(folder, yesterday - timedelta(days=3), "old", "The budget code is TANGO-7731.")
    _said(folder, today, "now", "The door code is 4417.")
    runner = CliRunner()
    first = runner.invoke(app, ["consolidate", "aria", "--daily"])
    assert first.exit_code == 0, first.output
    assert "aria daily: 1 created" in first.output  # a day the hub was off, caught up
    assert (folder / "knowledge/budget-code.md").exists()
    assert not (folder / "knowledge/door-code.md").exists()  # today waits for --today
    again = runner.invoke(app, ["consolidate", "aria", "--daily"])
    assert "aria daily: nothing to do" in again.output
    now = runner.invoke(app, ["consolidate", "aria", "--today"])
    assert now.exit_code == 0 and "aria daily: 1 created" in now.output, now.output
    assert (folder / "knowledge/door-code.md").exists()
    # The Anima's own log says what each run did, as it says what its turns did.
    logs = runner.invoke(app, ["logs", "aria"])
    assert logs.exit_code == 0, logs.output
    assert "aria daily: 1 created" in logs.output and "aria daily: nothing to do" in logs.output
    bad = runner.invoke(app, ["consolidate", "aria", "--day", "yesterday"])
    assert bad.exit_code == 2 and "is not a day: use YYYY-MM-DD" in bad.output
    one = runner.invoke(app, ["consolidate", "aria", "--day", today.isoformat()])
    assert "aria daily: nothing to do" in one.output  # distilled once, never twice


def test_what_a_new_user_tells_becomes_knowledge_and_a_procedure_today(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The three things a new user tries (issue 13), offline, watched appear at once."""
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--demo", "--owner", "Sam"]).exit_code == 0
    for said in (
        "We decided to ship the beta on Friday",
        "The deploy procedure: run tests, tag, push, announce in #general",
        "Reminder: the staging database password rotates monthly",
    ):
        assert runner.invoke(app, ["chat", "aria", said]).exit_code == 0
    done = runner.invoke(app, ["consolidate", "aria", "--today"])
    assert done.exit_code == 0 and "aria daily: 3 created" in done.output, done.output
    folder = home / "animas" / "aria"
    assert "run tests" in (folder / "procedures/how-to-deploy.md").read_text()
    knowledge = {p.name: p.read_text() for p in (folder / "knowledge").glob("*.md")}
    assert any("ship the beta on Friday" in text for text in knowledge.values()), knowledge
    assert any("rotates monthly" in text for text in knowledge.values()), knowledge
    # The procedure is found by what it is for, and drawn as written, named as --layer names it.
    found = runner.invoke(
        app, ["memory", "search", "aria", "How do I deploy?", "--limit", "1"], env=WIDE
    )
    assert found.exit_code == 0, found.output
    assert "procedures " in found.output and "How to deploy 1. run tests 2. tag" in found.output
    told = runner.invoke(app, ["chat", "aria", "How do I deploy?"])
    assert "- [" in told.output and "**How to deploy** 1. run tests 2. tag" in told.output
