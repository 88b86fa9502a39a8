"""At 80 columns (a terminal's default) the CLI's tables still print every id whole: an id
is what the next command takes (`people revoke s-…`, `token revoke t-…`), and a table that
folds or cuts it leaves nothing to copy."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from typer.testing import CliRunner

from hub.api.server import create_app
from hub.app import Hub
from hub.cli.main import app
from hub.settings import load_settings
from tests.api.signing import sign_in


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


async def _sign_in_twice(link: str, other: str) -> None:
    """Two browser sessions for the people the links are for, on the hub the CLI wrote."""
    hub = Hub(load_settings())
    await hub.start()
    try:
        transport = httpx.ASGITransport(app=create_app(hub))
        for path in (link, other):
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
                await sign_in(c, urlsplit(path).path)
                assert (await c.get("/api/me")).status_code == 200
    finally:
        await hub.stop()


def test_session_and_token_ids_print_whole_at_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANIMAHUB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANIMAHUB_SERVER__PUBLIC_URL", "https://hub.example.com")
    monkeypatch.setenv("COLUMNS", "80")
    run("init", "--owner", "Dana Li")
    name = "Bartholomew Featherstonehaugh"  # a long name, so every column wants room
    run("people", "owner", name, "--new")
    first = run("people", "invite", name).splitlines()[-1]
    second = run("people", "invite", name).splitlines()[-1]
    asyncio.run(_sign_in_twice(first, second))
    run("token", "create", "--person", name, "--label", "the laptop on the kitchen table")

    listed = run("people", "sessions", name)
    assert max(len(line) for line in listed.splitlines()) <= 80
    ids = re.findall(r"\bs-[0-9a-zA-Z_-]+", listed)
    assert len(ids) == 2, listed
    # The id printed is the whole id: `people revoke` takes it as printed.
    assert f"revoked session {ids[0]}" in run("people", "revoke", ids[0])
    assert re.findall(r"\bs-[0-9a-zA-Z_-]+", run("people", "sessions", name)) == [ids[1]]

    tokens = run("token", "list", "--person", name)
    assert max(len(line) for line in tokens.splitlines()) <= 80
    token_ids = re.findall(r"\bt-[0-9a-zA-Z_-]+", tokens)
    assert len(token_ids) == 1, tokens
    assert f"revoked token {token_ids[0]}" in run("token", "revoke", token_ids[0])
