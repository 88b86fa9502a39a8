"""`animahub init --owner`, `people …` and `token …` from the command line, each through an
in-process hub's API (no hub is running), as the CLI is used."""

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


def test_owner_invite_and_tokens_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    monkeypatch.setenv("ANIMAHUB_SERVER__PUBLIC_URL", "https://hub.example.com")
    monkeypatch.setenv("COLUMNS", "200")  # rich tables on one line a row
    run("init", "--owner", "Dana Li")
    assert 'owner = "Dana Li"' in (home / "hub.toml").read_text()
    assert re.search(r"Dana Li \(u-[0-9a-f]{10}\)", run("people", "owner"))
    assert re.search(r"Sam \(u-[0-9a-f]{10}\)", run("people", "owner", "Sam", "--new"))
    assert "owner" in run("people", "list").split("Sam", 1)[1].splitlines()[0]

    link = run("people", "invite", "BOB").splitlines()[-1]
    assert link.startswith("https://hub.example.com/signin/")
    token = run("token", "create", "--person", "bob", "--label", "laptop").splitlines()[-1]
    assert token.startswith("ahp_")
    listed = run("token", "list", "--person", "Bob")
    assert "laptop" in listed and token not in listed
    token_id = next(w for w in listed.split() if w.startswith("t-"))

    async def use() -> tuple[str, str, int]:
        """The link and the token against the hub these commands wrote to."""
        hub = Hub(load_settings())
        await hub.start()
        try:
            transport = httpx.ASGITransport(app=create_app(hub))
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as c:
                await sign_in(c, urlsplit(link).path)
                by_cookie = (await c.get("/api/me")).json()["id"]
                c.cookies.clear()
                me = await c.get("/api/me", headers={"Authorization": f"Bearer {token}"})
                return by_cookie, me.json()["id"], me.status_code
        finally:
            await hub.stop()

    bob = run("people", "show", "bob").splitlines()[0].split("(")[1].rstrip(")")
    assert asyncio.run(use()) == (bob, bob, 200)
    sessions = run("people", "sessions", "bob")
    session_id = next(w for w in sessions.split() if w.startswith("s-"))
    assert f"revoked session {session_id}" in run("people", "revoke", session_id)
    assert run("people", "sessions", "bob") == "no open sessions\n"  # not an empty table
    assert f"revoked token {token_id}" in run("token", "revoke", token_id)
    assert run("token", "list") == "no live API tokens\n"
    failed = CliRunner().invoke(app, ["people", "sessions", "nobody"])
    assert failed.exit_code == 1 and "no person named 'nobody' (HTTP 404)" in failed.output
