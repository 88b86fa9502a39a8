"""`animahub chat` with no hub running: what a person who sends nothing is told."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.cli.main import app
from tests.api.test_people_cli import run


def test_a_blank_message_is_refused_in_one_line_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was answered ("Noted, Sam: “”") and kept as an empty line of the conversation."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    run("init", "--demo", "--owner", "Sam")
    blank = CliRunner().invoke(app, ["chat", "aria", "  "])
    assert blank.exit_code == 1
    assert blank.output.strip() == "error: message: the message is empty (HTTP 422)"
    assert not list((tmp_path / "home" / "animas" / "aria" / "episodes").glob("*.md"))


def test_a_user_the_hub_does_not_know_is_refused_unless_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--user Ravi` for "Ravi Kumar" started a new person, with a memory of their own."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    run("init", "--demo", "--owner", "Sam")
    run("people", "invite", "Ravi Kumar")
    unknown = CliRunner().invoke(app, ["chat", "aria", "hello", "--user", "Ravi"])
    assert unknown.exit_code == 1
    assert unknown.output.startswith("error: no person named 'Ravi': check the spelling")
    assert CliRunner().invoke(app, ["people", "show", "Ravi"]).exit_code == 1  # not made
    known = CliRunner().invoke(app, ["chat", "aria", "hello", "--user", "ravi kumar"])
    assert known.exit_code == 0, known.output
    new = CliRunner().invoke(app, ["chat", "aria", "hello", "--user", "Ravi", "--new"])
    assert new.exit_code == 0, new.output
    assert CliRunner().invoke(app, ["people", "show", "Ravi"]).exit_code == 0
    again = CliRunner().invoke(app, ["chat", "aria", "hello", "--user", "ravi kumar", "--new"])
    assert again.exit_code == 1
    assert again.output.startswith("error: 'ravi kumar' is someone the hub knows already")
