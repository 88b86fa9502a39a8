"""The CLI's two consoles, and the few styled words it prints.

Markup is off: names, memories, task titles and error messages are printed exactly as they
are. With it on, "[llm]" in a hint vanished and a memory containing "[/]" made
`memory search` fail with a MarkupError. The CLI's own emphasis is a `Text` with a style."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Collection, Coroutine, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Final, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from hub.settings import Settings

console = Console(markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)
# Help text is Markdown (`code` shows as code), not Rich markup: "[people] dm_policy" is a
# config section, not a style.
HELP_MARKUP: Final = "markdown"


T = TypeVar("T")


def run_async(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`; on a thread of its own when this thread already runs an event
    loop (a notebook, an async test calling the app), where asyncio.run cannot nest: `init
    --demo`, which creates its Animas through the hub, was once called that way."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work).result()


def styled(*parts: str | tuple[str, str]) -> Text:
    """Plain strings and (text, style) pairs, none of them read as markup."""
    return Text.assemble(*parts)


def id_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], whole: Collection[str] = ("id",)
) -> Table:
    """A table whose `whole` columns (the ids the next command takes: `people revoke s-…`)
    are never cut or wrapped, however narrow the terminal (80 columns is a default): the
    other columns wrap, folding a long word, to make room."""
    table = Table(*headers)
    for row in rows:
        table.add_row(*row)
    for n, column in enumerate(table.columns):
        if column.header in whole:
            column.no_wrap = True
            column.min_width = max((len(row[n]) for row in rows), default=0)
        else:
            column.overflow = "fold"
    return table


def print_error(message: str) -> None:
    err.print(styled(("error:", "bold red"), " ", message), highlight=False)


def settings_or_exit(**overrides: Any) -> Settings:
    """The settings, or a one-line config error (exit code 2)."""
    # Imported here, as the CLI's other heavy modules are where they are used: `--help`
    # and a command's own usage errors need none of them (tests/unit/test_lazy_imports.py).
    from hub.settings import ConfigError, load_settings

    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except ConfigError as exc:
        raise fail(f"config: {exc}", code=2) from None


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `error: message` on stderr; the Exit to raise."""
    print_error(message)
    return typer.Exit(code)


def given(param: typer.CallbackParam, value: str | None) -> str | None:
    """A name or code argument's callback: empty or blank is a usage error (exit 2). Sent on,
    "" made a path like `/api/people/`, and the hub's answer was a bare 307 or Not Found."""
    if value is not None and not value.strip():
        shown = param.opts[0] if param.param_type_name == "option" else str(param.name).upper()
        raise fail(f"{shown} must not be empty", code=2)
    return value


async def show_reply(pieces: AsyncGenerator[str, None]) -> None:
    """A streamed reply: rendered as Markdown as it grows in a terminal (replies use bold,
    lists and code), the text as it came when piped, so scripts read what the hub sent.
    The stream is closed here even when printing stops it (`| head` closing the pipe): left
    to the garbage collector, it closed outside its task and printed two tracebacks."""
    from rich.live import Live
    from rich.markdown import Markdown

    from hub.memory.excerpt import closed

    async with aclosing(pieces):
        if not console.is_terminal:
            async for piece in pieces:
                console.out(piece, end="", highlight=False)
            console.out("")
            return
        text = ""
        with Live(console=console, refresh_per_second=8, vertical_overflow="visible") as live:
            async for piece in pieces:
                text += piece
                live.update(Markdown(closed(text)))
