"""The CLI's requests to the hub's API (`animahub people …`, `token …`, `tasks …`), and how
it asks which person a name means (docs/people.md)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import typer

from hub.cli.console import err, id_table, print_error
from hub.cli.runfile import HubBusy

if TYPE_CHECKING:
    from hub.settings import Settings


def quoted(name: str) -> str:
    """A name or id as one path segment."""
    return quote(name, safe="")


def cli_settings() -> Settings:
    from hub.settings import ConfigError, load_settings

    try:
        return load_settings()
    except ConfigError as exc:
        print_error(f"config: {exc}")
        raise typer.Exit(2) from None


class _Ask(Exception):
    """The hub's 409 for a name that is not an id: the people it may mean."""

    def __init__(self, candidates: list[dict[str, Any]]) -> None:
        super().__init__("which person?")
        self.candidates = candidates


def call(
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    ok: int = 200,
    hints: dict[int, str] | None = None,
) -> Any:
    """One API request; a refusal is one line on stderr and exit code 1 (`hints`, by status,
    added to it: what to do about it). A name the hub will not take for a person (409 with
    candidates) raises `_Ask`, for `by_name` to ask which."""
    from hub.cli.client import hub_client, refusal

    async def run() -> Any:
        async with hub_client(cli_settings()) as client:
            response = await client.request(method, path, json=body)
        if response.status_code == 409 and (candidates := _candidates(response)):
            raise _Ask(candidates)
        if response.status_code != ok:
            hint = (hints or {}).get(response.status_code, "")
            hint = f"; {hint}" if hint else ""
            print_error(f"{refusal(response)}{hint} (HTTP {response.status_code})")
            raise typer.Exit(1)
        return response.json()

    try:
        return asyncio.run(run())
    except HubBusy as exc:
        print_error(str(exc))
        raise typer.Exit(1) from None


def _candidates(response: Any) -> list[dict[str, Any]]:
    try:
        body = response.json()
    except ValueError:
        return []
    found = body.get("candidates") if isinstance(body, dict) else None
    return found if isinstance(found, list) else []


def by_name(name: str, attempt: Callable[[str, bool], Any], can_new: bool = False) -> Any:
    """`attempt(name, new)`; when the hub answers that `name` is a name several people (or
    a platform's account) go by, lists them with their accounts and asks which one is
    meant, by number or id ("new": someone new, where that makes sense). Without a
    terminal to ask on, the list and exit code 1: run it again with the id."""
    try:
        return attempt(name, False)
    except _Ask as ask:
        chosen = choose(name, ask.candidates, can_new)
    # `person:ID`: an id and nothing else (an id made from a name before asks as a name)
    return attempt(f"person:{chosen}" if chosen else name, chosen is None)


def choose(name: str, candidates: list[dict[str, Any]], can_new: bool) -> str | None:
    """The id picked among `candidates`, or None for someone new."""
    err.print(f"{name!r} is a name, not a person id; it may be:", highlight=False)
    rows = [
        (str(n), p["id"], p["name"], ", ".join(p["accounts"])) for n, p in enumerate(candidates, 1)
    ]
    err.print(id_table(("", "id", "name", "accounts"), rows))
    new = " or 'new' for someone new" if can_new else ""
    if not sys.stdin.isatty():
        print_error(f"name the person by id{' (or --new for someone new)' if can_new else ''}")
        raise typer.Exit(1)
    ids = [str(person["id"]) for person in candidates]
    answer = str(typer.prompt(f"Which one? (a number or an id{new})", err=True)).strip()
    if can_new and answer.lower() == "new":
        return None
    if answer.isdigit() and 1 <= int(answer) <= len(ids):
        return ids[int(answer) - 1]
    if answer in ids:
        return answer
    print_error(f"{answer!r} is none of them; nothing was done")
    raise typer.Exit(1)


def existing(name: str) -> dict[str, Any]:
    """The person NAME means (asked about when it is only a name), as `people show` has it."""
    found: dict[str, Any] = by_name(
        name, lambda who, _new: call("GET", f"/api/people/{quoted(who)}")
    )
    return found


def ref(person: dict[str, Any]) -> str:
    """A person the hub showed, as a path segment that is their id and nothing else."""
    return quoted(f"person:{person['id']}")
