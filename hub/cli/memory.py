"""`animahub repair-rag`, `animahub consolidate` and `animahub memory ...`: memory from the
command line.

Each goes through the one client (hub/cli/client.py): the running hub's API, or the same
routes of an in-process hub when none runs (the embedded index can only be open in one
process). No command builds memory, people or a database of its own: hub/app.py is the one
place they are made, so a search, a consolidation or a restore is the hub's, hub or no hub.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hub.cli.console import HELP_MARKUP, console, fail, given, settings_or_exit
from hub.cli.runfile import HubBusy

# The rest is imported where it is used: every command imports this module, and `--help`
# needs none of the memory, the database, httpx or the hub (tests/unit/test_lazy_imports.py).
if TYPE_CHECKING:
    import httpx

    from hub.animas import AnimaRegistry
    from hub.settings import Settings


memory_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="Search an Anima's memory, restore what was forgotten.",
    no_args_is_help=True,
)


def registry_of(settings: Settings) -> AnimaRegistry:
    """The data folder's Animas, loaded."""
    from hub.animas import AnimaRegistry
    from hub.roles import load_roles

    registry = AnimaRegistry(settings.home / "animas", load_roles())
    registry.load()
    return registry


def animas_in(settings: Settings) -> list[str]:
    return registry_of(settings).names()


def known_anima(settings: Settings, name: str) -> None:
    """Refuse a name no Anima of the data folder has, in the one line every command uses."""
    if name not in animas_in(settings):
        raise fail(f"no Anima named {name!r}")


def repair_rag(settings: Settings, anima: str | None, full: bool) -> None:
    """Re-index ANIMA (or every Anima) from its markdown. `full` without an Anima empties
    the whole index first, so the points of Animas that no longer exist go too; with one,
    that Anima's points are dropped and rebuilt, as always."""
    from hub.cli.client import through_hub

    if anima is not None:
        known_anima(settings, anima)

    async def work(client: httpx.AsyncClient) -> dict[str, int]:
        if anima is not None:
            with console.status(f"re-indexing {anima}…"):
                response = await client.post(f"/api/memory/{anima}/rebuild")
            return {anima: int(_answer(response)["items"])}
        with console.status("re-indexing every Anima…"):
            response = await client.post("/api/memory/rebuild", params={"full": full})
        return {name: int(items) for name, items in _answer(response)["animas"].items()}

    counts = through_hub(settings, work)
    for name, items in counts.items():
        console.print(f"{name}: {items} items re-indexed", highlight=False)
    console.print(f"re-indexed {len(counts)} Anima(s); the markdown is unchanged")


@memory_app.command("search")
def memory_search(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The Anima whose memory to search.", callback=given)],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    scope: Annotated[
        str, typer.Option(help="Whose: all, shared, person:ID or channel:KEY (comma-separated).")
    ] = "all",
    layer: Annotated[
        str, typer.Option(help="What kind: all, episodes, knowledge, procedures, skills, people.")
    ] = "all",
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many results.")] = 10,
) -> None:
    """Search an Anima's memory as an admin (every privacy scope unless --scope says)."""
    from rich.console import Group
    from rich.markdown import Markdown
    from rich.table import Table
    from rich.text import Text

    from hub.cli.client import through_hub
    from hub.memory.admin_search import scopes_and_layer
    from hub.memory.documents import layer_name
    from hub.memory.excerpt import excerpt, inline
    from hub.memory.lexical import tokenize

    if not query.strip():  # REST refuses it too; searched, it listed whatever came first
        raise fail("the query is empty: say what to look for", code=2)
    try:  # --scope knowledge: a layer, as REST takes it
        scopes, layer = scopes_and_layer(scope, layer)
    except ValueError as exc:
        raise fail(str(exc), code=2) from None
    settings: Settings = ctx.obj
    known_anima(settings, name)
    params: dict[str, str | int] = {
        "query": query,
        "scope": ",".join(scopes) or "all",
        "layer": layer,
        "limit": limit,
    }

    async def work(client: httpx.AsyncClient) -> list[dict[str, Any]]:
        response = await client.get(f"/api/memory/{name}/search", params=params)
        found: list[dict[str, Any]] = _answer(response)["results"]
        return found

    rows = through_hub(settings, work)
    if not rows:
        console.print(f"nothing in {name}'s memory matches that", highlight=False)
        return
    table = Table("score", "layer", "text", "why")
    wanted = set(tokenize(query))
    for row in rows:
        where = row["path"] + (f" § {row['section']}" if row.get("section") else "")
        text = " ".join(row["text"].split())
        shown = Markdown(inline(excerpt(text, wanted, 160)))  # **who**: what, what matches
        # Where it is, under it: a column of its own was cut to "episodes/2026-1…" at 80.
        cell = Group(shown, Text(where, style="dim", overflow="fold"))
        table.add_row(f"{row['score']:.4f}", layer_name(row["layer"]), cell, str(row["why"]))
    console.print(table)


# consolidation and forgetting -------------------------------------------------------------


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON of a hub's answer, or the hub's error message as a CLI error."""
    from hub.cli.client import refusal_line

    if response.is_success:
        body: dict[str, Any] = response.json()
        return body
    raise fail(refusal_line(response))


def consolidate(
    name: Annotated[
        str, typer.Argument(help="The Anima whose memory to consolidate.", callback=given)
    ],
    daily: Annotated[
        bool, typer.Option("--daily", help="Distill every day not yet distilled, to yesterday.")
    ] = False,
    today: Annotated[
        bool, typer.Option("--today", help="With --daily: today's episodes too.")
    ] = False,
    day: Annotated[
        str | None, typer.Option("--day", help="Distill this day only (YYYY-MM-DD).")
    ] = None,
    weekly: Annotated[
        bool, typer.Option("--weekly", help="Merge duplicates, flag, compress old episodes.")
    ] = False,
    monthly: Annotated[bool, typer.Option("--monthly", help="Forget unused notes.")] = False,
) -> None:
    """Run memory consolidation stages now: daily, weekly, monthly, in that order.

    The scheduler runs them by itself: daily at midnight, weekly on Sundays, monthly."""
    from hub.cli.client import through_hub

    settings = settings_or_exit()
    daily = daily or today or day is not None
    stages = [s for s, on in (("daily", daily), ("weekly", weekly), ("monthly", monthly)) if on]
    if not stages:
        raise fail("choose at least one of --daily, --weekly, --monthly", code=2)
    try:
        if day:
            date.fromisoformat(day)
    except ValueError:
        raise fail(f"--day {day!r} is not a day: use YYYY-MM-DD", code=2) from None
    known_anima(settings, name)
    params: dict[str, str | bool] = {"today": today, **({"day": day} if day else {})}

    async def work(client: httpx.AsyncClient) -> None:
        for stage in stages:  # daily, weekly, monthly: in that order
            with console.status(f"{name}: {stage} consolidation…"):
                response = await client.post(
                    f"/api/memory/{name}/consolidate", params={"stage": stage, **params}
                )
            console.print(_answer(response)["summary"], highlight=False)

    try:
        through_hub(settings, work, calls_the_model=True)  # daily distils with the model
    except HubBusy as exc:
        raise fail(str(exc)) from None


@memory_app.command("restore")
def memory_restore(
    ctx: typer.Context,
    name: Annotated[
        str, typer.Argument(help="The Anima whose note to bring back.", callback=given)
    ],
    path: Annotated[
        str, typer.Argument(help="The forgotten note, e.g. archive/forgotten/knowledge/x.md")
    ],
) -> None:
    """Bring back a note that monthly forgetting moved to archive/forgotten/."""
    from hub.cli.client import through_hub

    settings: Settings = ctx.obj
    known_anima(settings, name)

    async def work(client: httpx.AsyncClient) -> str:
        response = await client.post(f"/api/memory/{name}/restore", json={"path": path})
        return str(_answer(response)["path"])

    try:
        restored = through_hub(settings, work)
    except HubBusy as exc:
        raise fail(str(exc)) from None
    console.print(f"{name}: restored {restored}", highlight=False)
