"""The memory commands and `anima create` with a hub running and with none, through the one
client (issue 42): the same words either way, and `repair-rag --full` empties the index with
a hub running too (it once rebuilt each Anima through the hub and left the points of Animas
that no longer exist)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from hub.cli.runfile import hold_data_root
from hub.memory.index import MemoryFilter
from hub.memory.service import MemoryService
from hub.settings import load_settings
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.e2e


def points(home: Path, monkeypatch: pytest.MonkeyPatch, anima: str) -> int:
    """`anima`'s points in the index, read with no hub running and without `start()`."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))

    async def count() -> int:
        settings = load_settings()
        with hold_data_root(settings.home):
            memory = MemoryService.from_settings(settings.home, settings.memory)
            try:
                return memory.index.count(MemoryFilter(anima=anima))
            finally:
                await memory.stop()

    return asyncio.run(count())


def commands(home: Path, new: str) -> None:
    """The memory commands and `anima create`, each as a person runs it, and what it says."""
    created = cli(home, "anima", "create", "--name", new, "--role", "writer")
    assert created.returncode == 0, created.stderr
    assert f"created Anima {new} (writer)" in created.stdout
    bad = cli(home, "anima", "create", "--name", "Bad Name", "--role", "ops")
    assert bad.returncode == 1 and "invalid Anima name" in bad.stderr
    said = cli(home, "chat", "aria", f"The budget code for {new} is TANGO-7731.")
    assert said.returncode == 0, said.stderr
    found = cli(home, "memory", "search", "aria", f"budget code {new}", COLUMNS="250")
    assert found.returncode == 0 and "TANGO-7731" in found.stdout, found.stderr
    done = cli(home, "consolidate", "aria", "--today")
    assert done.returncode == 0 and "aria daily: " in done.stdout, done.stderr
    archived = home / "animas/aria/archive/forgotten/knowledge" / f"wifi-{new}.md"
    archived.parent.mkdir(parents=True, exist_ok=True)
    archived.write_text("The guest wifi is Guest-5G.\n")
    restored = cli(home, "memory", "restore", "aria", f"knowledge/wifi-{new}.md")
    assert restored.returncode == 0, restored.stderr
    assert f"aria: restored knowledge/wifi-{new}.md" in restored.stdout
    again = cli(home, "memory", "restore", "aria", f"knowledge/wifi-{new}.md")
    assert again.returncode == 1 and "no forgotten note" in again.stderr
    one = cli(home, "repair-rag", "--anima", new)
    assert one.returncode == 0 and "re-indexed 1 Anima(s)" in one.stdout, one.stderr


def test_memory_commands_and_anima_create_with_a_hub_running_and_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo").returncode == 0
    commands(home, "otto")  # no hub running: an in-process one
    said = cli(home, "chat", "otto", "The kumquat order ships on Friday.")
    assert said.returncode == 0, said.stderr
    assert points(home, monkeypatch, "otto") > 0
    shutil.rmtree(home / "animas" / "otto")  # gone; its points are still in the index

    hub = HubProcess(home, free_port()).start()
    try:
        full = cli(home, "repair-rag", "--full")
    finally:
        assert hub.stop() == 0
    assert full.returncode == 0, full.stderr
    assert points(home, monkeypatch, "otto") == 0
    assert "re-indexed 3 Anima(s)" in full.stdout  # mika, aria, kai

    hub = HubProcess(home, free_port()).start()
    try:
        commands(home, "wren")
        assert "wren" in [a["name"] for a in hub.get("/api/animas")]
    finally:
        assert hub.stop() == 0


def test_start_refuses_an_admin_who_names_no_person_in_one_line(tmp_path: Path) -> None:
    """`start` asks the hub it built (not a database and people of its own) what `Hub.start`
    would refuse, and says it in one line before it listens."""
    home = tmp_path / "home"
    assert cli(home, "init").returncode == 0
    result = cli(
        home, "start", "--port", str(free_port()), ANIMAHUB_HUB__ADMINS='["person:nobody"]'
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "config: [hub] admins: 'person:nobody' names no person" in lines[0]
