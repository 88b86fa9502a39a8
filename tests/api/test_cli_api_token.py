"""The CLI against a running hub started with `server.api_token`: from a shell without it,
it is the owner by the data folder's owner.key; without that too (another OS user cannot
read it), one line naming what to set, never httpx's two-line error."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from animahub_kit.contract.server import HubServer
from hub.api.server import create_app
from hub.app import Hub
from hub.cli.main import app
from hub.cli.runfile import hold_data_root
from hub.people.owner_key import owner_key_path
from hub.settings import load_settings

TOKEN = "the-hubs-admin-token"
NEEDS_TOKEN = (
    "the hub needs a credential: run this as the OS user who owns the data folder (it reads "
    "owner.key there), or set ANIMAHUB_SERVER__API_TOKEN in this shell to the hub's "
    "[server] api_token (HTTP 401)"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


async def against_running_hub(
    monkeypatch: pytest.MonkeyPatch, *commands: list[str], owner_key: bool = False
) -> list[Result]:
    """Each command run (in a thread: the CLI is synchronous) while a hub with an API token
    serves this data folder, the token absent from the CLI's environment and, unless
    `owner_key`, the owner's key file out of its reach."""
    monkeypatch.setenv("ANIMAHUB_SERVER__API_TOKEN", TOKEN)
    hub = Hub(load_settings())
    await hub.start()
    server = HubServer(create_app(hub))
    await server.start()
    monkeypatch.delenv("ANIMAHUB_SERVER__API_TOKEN")
    if not owner_key:  # the hub read it at its start; this shell cannot
        owner_key_path(hub.settings.home).unlink()
    try:
        with hold_data_root(hub.settings.home, server.url):
            return [await asyncio.to_thread(invoke, *command) for command in commands]
    finally:
        await server.stop()
        await hub.stop()


async def test_status_and_api_commands_say_which_token_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANIMAHUB_MEMORY__ENABLED", "false")
    assert invoke("init", "--demo", "--owner", "Dana Scully").exit_code == 0
    status, people = await against_running_hub(monkeypatch, ["status"], ["people", "list"])
    assert status.exit_code == 1
    assert status.output.startswith("error: the hub at http://127.0.0.1:")
    assert status.output.endswith(f": {NEEDS_TOKEN}\n")
    assert len(status.output.splitlines()) == 1 and "mozilla" not in status.output
    assert (people.exit_code, people.output) == (1, f"error: {NEEDS_TOKEN}\n")


async def test_the_owners_shell_needs_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OS user of the data folder reads its owner.key: the CLI is the owner with it."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANIMAHUB_MEMORY__ENABLED", "false")
    assert invoke("init", "--demo", "--owner", "Dana Scully").exit_code == 0
    assert owner_key_path(tmp_path / "home").stat().st_mode & 0o777 == 0o600
    status, people = await against_running_hub(
        monkeypatch, ["status"], ["people", "list"], owner_key=True
    )
    assert status.exit_code == 0, status.output
    assert people.exit_code == 0 and "Dana Scully" in people.output, people.output
