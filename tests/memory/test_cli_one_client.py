"""The memory commands go through the hub's routes with no hub running too (issue 42): they
once built a memory of their own, which did not know the hub's `[memory] enabled = false`
and searched, consolidated and restored in a memory the hub had switched off."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.cli.main import app

DISABLED = "memory is disabled ([memory] enabled = false) (HTTP 409)"


@pytest.mark.parametrize(
    "args",
    [
        ["memory", "search", "aria", "tea"],
        ["consolidate", "aria", "--daily"],
        ["memory", "restore", "aria", "knowledge/wifi.md"],
        ["repair-rag", "--anima", "aria"],
        ["repair-rag", "--full"],
    ],
    ids=["search", "consolidate", "restore", "repair-one", "repair-all"],
)
def test_with_memory_disabled_a_memory_command_says_so_as_the_hub_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    made = runner.invoke(app, ["init", "--demo", "--owner", "Sam"])
    assert made.exit_code == 0, made.output
    monkeypatch.setenv("ANIMAHUB_MEMORY__ENABLED", "false")
    done = runner.invoke(app, args)
    assert done.exit_code == 1, done.output
    assert DISABLED in done.output
