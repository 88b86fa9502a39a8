"""`animahub repair-rag`, `animahub consolidate` and `animahub memory ...`: memory from the
command line.

With a hub running on the data root these go through its API (the embedded index can only
be open in one process); otherwise they take the data root's lock and work in-process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hub.cli.console import HELP_MARKUP, console, fail, given, settings_or_exit
from hub.cli.runfile import HubBusy, hold_data_root, running_hub

# The rest is imported where it is used: every command imports this module, and `--help`
# needs none of the memory, the database, httpx or the hub (tests/unit/test_lazy_imports.py).
if TYPE_CHECKING:
    import httpx

    from hub.animas import AnimaRegistry
    from hub.memory.consolidation import Consolidator
    from hub.memory.service import MemoryService
    from hub.people.identity import IdentityService
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


@asynccontextmanager
async def local_memory(settings: Settings) -> AsyncIterator[MemoryService]:
    async with local_hub(settings) as (memory, _):
        yield memory


@asynccontextmanager
async def local_hub(settings: Settings) -> AsyncIterator[tuple[MemoryService, IdentityService]]:
    """The data root's memory, and its people, with no hub running (holding its lock)."""
    from hub.logs import to_files
    from hub.memory.service import MemoryService
    from hub.people.identity import IdentityService  # heavy (the database): only when used
    from hub.store.db import Database

    with hold_data_root(settings.home), to_files(settings.home):
        db = Database(settings.database_url)
        db.migrate()  # as the hub does at start: a fresh data root has no tables yet
        identity = IdentityService.of(settings, db)
        memory = MemoryService.from_settings(settings.home, settings.memory)
        # The people a query names, and the ids merged into a person, as the running hub
        # knows them: a search ranks the same with the hub stopped as through it.
        memory.aliases_of, memory.names_in = identity.aliases_of, identity.names_in
        try:
            await memory.start(animas_in(settings))
            yield memory, identity
        finally:
            await memory.stop()
            db.dispose()


def repair_rag(settings: Settings, anima: str | None, full: bool) -> None:
    names = animas_in(settings)
    targets = names if anima is None else [anima]
    if anima is not None:
        known_anima(settings, anima)
    running = running_hub(settings.home)
    if running is not None:
        import httpx

        from hub.cli.client import auth_headers

        for name in targets:
            with console.status(f"re-indexing {name} through the running hub…"):
                response = httpx.post(
                    f"{running.url}/api/memory/{name}/rebuild",
                    headers=auth_headers(settings),
                    timeout=None,
                )
            console.print(f"{name}: {_answer(response)['items']} items re-indexed")
        return
    # --full with --anima: that Anima's points are dropped and rebuilt (as always); the
    # whole index is emptied only when every Anima is rebuilt.
    asyncio.run(_repair_locally(settings, targets, full and anima is None))


async def _repair_locally(settings: Settings, targets: list[str], everything: bool) -> None:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
    )

    async with local_memory(settings) as memory:
        if everything:  # points of Animas that no longer exist go too
            memory.index.clear()
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console) as progress:
            for name in targets:
                task = progress.add_task(name, total=None)

                def advance(done: int, total: int, task: TaskID = task) -> None:
                    progress.update(task, completed=done, total=total)

                count = await memory.rebuild(name, advance)
                progress.update(task, completed=count, total=max(count, 1))
        # No hub is serving, so the index may block while it builds its search graph.
        with console.status("optimizing the index…"):
            memory.index.optimize()
    console.print(f"re-indexed {len(targets)} Anima(s); the markdown is unchanged")


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
    running = running_hub(settings.home)
    if running is not None:
        import httpx

        from hub.cli.client import auth_headers

        response = httpx.get(
            f"{running.url}/api/memory/{name}/search",
            params={
                "query": query,
                "scope": ",".join(scopes) or "all",
                "layer": layer,
                "limit": limit,
            },
            headers=auth_headers(settings),
            timeout=60,
        )
        rows = _answer(response)["results"]
    else:
        rows = asyncio.run(_search_locally(settings, name, query, scopes, layer, limit))
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


async def _search_locally(
    settings: Settings, name: str, query: str, scopes: tuple[str, ...], layer: str, limit: int
) -> list[dict[str, Any]]:
    from hub.memory.admin_search import search_rows

    async with local_hub(settings) as (memory, identity):
        return await search_rows(memory, name, query, scopes, layer, limit, identity.display_name)


# consolidation and forgetting -------------------------------------------------------------


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON of a hub's answer, or the hub's error message as a CLI error."""
    from hub.cli.client import refusal_line

    if response.is_success:
        body: dict[str, Any] = response.json()
        return body
    raise fail(refusal_line(response))


@asynccontextmanager
async def local_consolidator(settings: Settings) -> AsyncIterator[Consolidator]:
    """A Consolidator on an in-process MemoryService (holding the data root's lock)."""
    from hub.memory.consolidation import Consolidator
    from hub.schedule.distill_llm import anima_distillers

    registry = registry_of(settings)
    async with local_memory(settings) as memory:
        yield Consolidator(memory, anima_distillers(settings.llm, registry))


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
    settings = settings_or_exit()
    daily = daily or today or day is not None
    stages = [s for s, on in (("daily", daily), ("weekly", weekly), ("monthly", monthly)) if on]
    if not stages:
        raise fail("choose at least one of --daily, --weekly, --monthly", code=2)
    try:
        one_day = date.fromisoformat(day) if day else None
    except ValueError:
        raise fail(f"--day {day!r} is not a day: use YYYY-MM-DD", code=2) from None
    known_anima(settings, name)
    running = running_hub(settings.home)
    if running is not None:
        import httpx

        from hub.cli.client import auth_headers

        for stage in stages:
            with console.status(f"{name}: {stage} consolidation through the running hub…"):
                response = httpx.post(
                    f"{running.url}/api/memory/{name}/consolidate",
                    params={"stage": stage, "today": today, **({"day": day} if day else {})},
                    headers=auth_headers(settings),
                    timeout=None,
                )
            console.print(_answer(response)["summary"], highlight=False)
        return
    try:
        summaries = asyncio.run(_consolidate_locally(settings, name, stages, one_day, today))
    except HubBusy as exc:
        raise fail(str(exc)) from None
    for line in summaries:
        console.print(line, highlight=False)


async def _consolidate_locally(
    settings: Settings, name: str, stages: list[str], day: date | None, today: bool
) -> list[str]:
    from hub.animas import effective_timezone
    from hub.memory.consolidation import STAGES

    timezone = effective_timezone(registry_of(settings).get(name), settings.hub)
    summaries = []
    async with local_consolidator(settings) as consolidator:
        for stage in STAGES:
            if stage in stages:
                report = await consolidator.run(
                    name, stage, datetime.now(UTC), timezone, day=day, with_today=today
                )
                summaries.append(report.summary())
    return summaries


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
    settings: Settings = ctx.obj
    known_anima(settings, name)
    running = running_hub(settings.home)
    if running is not None:
        import httpx

        from hub.cli.client import auth_headers

        response = httpx.post(
            f"{running.url}/api/memory/{name}/restore",
            json={"path": path},
            headers=auth_headers(settings),
            timeout=60,
        )
        restored = str(_answer(response)["path"])
    else:
        try:
            restored = asyncio.run(_restore_locally(settings, name, path))
        except HubBusy as exc:
            raise fail(str(exc)) from None
    console.print(f"{name}: restored {restored}", highlight=False)


async def _restore_locally(settings: Settings, name: str, path: str) -> str:
    from hub.memory.files import MemoryPathError

    async with local_consolidator(settings) as consolidator:
        try:
            return await consolidator.restore(name, path)
        except (MemoryPathError, FileNotFoundError, FileExistsError) as exc:
            raise fail(str(exc)) from None
