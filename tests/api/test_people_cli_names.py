"""`animahub people …` and `token create` given a name a stranger goes by (issue 41, class
3): the command lists the candidates with their accounts and asks which one, by number or
id, or someone new; without a terminal to ask on it stops, for the id. `people audit` finds
who took a name under the old, name-made ids."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hub.app import Hub
from hub.cli.main import app
from hub.messages import PlatformUser
from hub.settings import load_settings
from hub.store.db import Database
from hub.store.models import AuditEntry, Identity, Person

STRANGER = PlatformUser("telegram", "5551234", "Carol")


@dataclass(frozen=True, slots=True)
class Ran:
    exit_code: int
    output: str


def invoke(*args: str, typed: str | None = None) -> Result | Ran:
    """The command, in-process; with `typed`, in a process of its own whose stdin is a
    terminal (a pty) where that is typed: the command asks only on a terminal."""
    if typed is None:
        return CliRunner().invoke(app, list(args))
    main, terminal = os.openpty()
    try:
        os.write(main, typed.encode())
        done = subprocess.run(
            [sys.executable, "-c", "from hub.cli.main import app; app()", *args],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(main)
        os.close(terminal)
    return Ran(done.returncode, done.stdout + done.stderr)


@pytest.fixture(autouse=True)
def stranger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A data root where a Telegram stranger calling themselves Carol wrote first."""
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    monkeypatch.setenv("ANIMAHUB_MEMORY__ENABLED", "false")
    monkeypatch.setenv("COLUMNS", "200")
    assert invoke("init", "--demo", "--owner", "Olivia").exit_code == 0

    async def first_message() -> str:
        hub = Hub(load_settings())
        await hub.start()
        try:
            return hub.identity.resolve(STRANGER).id
        finally:
            await hub.stop()

    return asyncio.run(first_message())


def test_invite_by_the_strangers_name_lists_them_and_stops_without_a_terminal(
    stranger: str,
) -> None:
    asked = invoke("people", "invite", "Carol")
    assert asked.exit_code == 1
    assert "'Carol' is a name, not a person id; it may be:" in asked.output
    assert stranger in asked.output and "telegram:5551234" in asked.output
    assert "name the person by id (or --new for someone new)" in asked.output
    assert "/signin/" not in asked.output


def test_invite_asks_and_someone_new_is_not_the_stranger(stranger: str) -> None:
    made = invoke("people", "invite", "Carol", typed="new\n")
    assert made.exit_code == 0, made.output
    new = re.search(r"new person: Carol \((u-[0-9a-f]{10})\)", made.output)
    assert new is not None and new[1] != stranger
    assert re.search(r"^https?://\S+/signin/\S+$", made.output, re.MULTILINE)


def test_show_asks_and_takes_a_number_or_an_id(stranger: str) -> None:
    by_number = invoke("people", "show", "carol", typed="1\n")
    assert by_number.exit_code == 0, by_number.output
    assert f"Carol ({stranger})" in by_number.output and "5551234" in by_number.output
    by_id = invoke("people", "show", "carol", typed=f"{stranger}\n")
    assert by_id.exit_code == 0 and f"Carol ({stranger})" in by_id.output
    wrong = invoke("people", "show", "carol", typed="u-0000000000\n")
    assert wrong.exit_code == 1 and "nothing was done" in wrong.output
    assert invoke("people", "show", stranger).exit_code == 0  # an id needs no asking


def test_token_and_owner_by_the_strangers_name_ask(stranger: str) -> None:
    token = invoke("token", "create", "--person", "Carol")
    assert token.exit_code == 1 and stranger in token.output and "ahp_" not in token.output
    owner = invoke("people", "owner", "Carol")
    assert owner.exit_code == 1 and stranger in owner.output
    assert "Olivia (" in invoke("people", "owner").output
    mine = invoke("token", "create", "--person", "Carol", typed="new\n")
    assert mine.exit_code == 0 and f"for {stranger}" not in mine.output


def test_people_audit_finds_an_old_squatter_and_says_how_to_split(tmp_path: Path) -> None:
    settings = load_settings()
    db = Database(settings.database_url)
    with db.session() as session:  # as the old code wrote it: the stranger is `carol`
        session.add(Person(id="carol", display_name="Carol", roles=[]))
        session.flush()
        for platform, user_id in (("telegram", "777"), ("web", "carol")):
            session.add(
                Identity(platform=platform, user_id=user_id, person_id="carol", display_name="")
            )
        session.add(
            AuditEntry(actor="owner:x", where="api", action="person.invite", target="carol")
        )
    db.dispose()
    audit = invoke("people", "audit")
    assert audit.exit_code == 0, audit.output
    assert "carol" in audit.output and "telegram:777" in audit.output
    assert "picked by an admin (person.invite)" in audit.output
    assert "animahub people unlink person:carol telegram:777" in audit.output
    split = invoke("people", "unlink", "person:carol", "telegram:777")
    assert split.exit_code == 0, split.output
    assert re.search(r"it is 777 \(u-[0-9a-f]{10}\) now", split.output)


def test_chat_as_the_strangers_name_asks_and_speaks_as_the_one_chosen(stranger: str) -> None:
    asked = invoke("chat", "mika", "hello", "--user", "Carol")
    assert asked.exit_code == 1 and stranger in asked.output and "telegram:5551234" in asked.output
    refused = invoke("chat", "mika", "hello", "--user", "Carol", "--new")
    assert refused.exit_code == 1 and "leave out --new to choose one" in refused.output
    chosen = invoke("chat", "mika", "hello", "--user", "Carol", typed="1\n")
    assert chosen.exit_code == 0, chosen.output
    assert invoke("people", "show", stranger).exit_code == 0
    listed = invoke("people", "list").output
    assert listed.count("Carol") == 1  # no one new was made
