"""The `animahub` command line (typer + rich)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import re
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hub.cli.chat import chat
from hub.cli.console import (
    HELP_MARKUP,
    console,
    err,
    fail,
    given,
    print_error,
    settings_or_exit,
    styled,
)
from hub.cli.mcp import mcp
from hub.cli.memory import consolidate, known_anima, memory_app, registry_of
from hub.cli.people import pairing_app, people_app, token_app
from hub.cli.runfile import HubBusy, hold_data_root, hold_database, running_hub
from hub.cli.status import status
from hub.cli.tasks import task_app
from hub.people.owner_key import OwnerKeyError

# Everything else is imported by the command that uses it: defining the commands must stay
# cheap, since `--help`, a usage error and every command pay for it (issue 47; what
# `--help` may import is tests/unit/test_lazy_imports.py).
if TYPE_CHECKING:
    import httpx
    import uvicorn

    from hub.app import Hub
    from hub.settings import Settings

app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="AnimaHub: persistent AI colleagues on your team's chat.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
anima_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP, help="Create and list Animas.", no_args_is_help=True
)
app.add_typer(anima_app, name="anima")
app.add_typer(memory_app, name="memory")
app.add_typer(people_app, name="people")
app.add_typer(token_app, name="token")
app.add_typer(pairing_app, name="pairing")
app.add_typer(task_app, name="task")
app.command()(mcp)
app.command("consolidate")(consolidate)

DEMO: tuple[tuple[str, str, str | None], ...] = (
    ("mika", "manager", None),
    ("aria", "researcher", "mika"),
    ("kai", "engineer", "mika"),
)


@contextlib.contextmanager
def _held(settings: Settings, url: str) -> Iterator[None]:
    """One hub per data root and database; with `[storage] shared` several workers share
    both, and leases divide the work instead (docs/scale.md)."""
    if settings.storage.shared:
        yield
        return
    with hold_data_root(settings.home, url), hold_database(settings.database_url):
        yield


@app.command()
def init(
    demo: Annotated[bool, typer.Option(help="Also create three demo Animas.")] = False,
    owner: Annotated[
        str | None, typer.Option(help="The hub's owner (asked; default: your OS user).")
    ] = None,
) -> None:
    """Create the data folder and its hub.toml; with --demo, three Animas (idempotent)."""
    from hub.people.owner_key import ensure_owner_key
    from hub.roles import bundled_config_dir
    from hub.settings import CONFIG_NAME

    settings = settings_or_exit()
    home = settings.home
    for sub in ("animas", "shared/users", "logs"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    ensure_owner_key(home)  # the CLI's credential (hub/people/owner_key.py), readable by you only
    config = home / CONFIG_NAME
    if not config.exists():
        text = (bundled_config_dir() / "hub.example.toml").read_text(encoding="utf-8")
        if demo:
            text = re.sub(r'(?m)^default_anima = ""', 'default_anima = "mika"', text, count=1)
        name = owner or _ask_owner()
        text = re.sub(r'(?m)^owner = ""', f"owner = {json.dumps(name)}", text, count=1)
        config.write_text(text, encoding="utf-8")
        console.print(f"wrote {config}")
    if demo:
        settings = settings_or_exit()
        _create_animas(settings, [a for a in DEMO if a[0] not in registry_of(settings)])
    console.print(styled("data folder ready: ", (str(home), "bold")))


def _ask_owner() -> str:
    """Who owns the hub: the web chat's person on this machine (docs/people.md)."""
    from hub.people.identity import os_user

    default = os_user()
    if not sys.stdin.isatty():
        return default
    return str(typer.prompt("The hub's owner (your name)", default=default)).strip() or default


def _create_animas(settings: Settings, animas: list[tuple[str, str, str | None]]) -> None:
    """Create each (name, role, supervisor) through the hub (the running one, else an
    in-process one, for them all), in order: a supervisor before those it supervises."""
    from hub.cli.client import refusal_line, through_hub

    async def create(client: httpx.AsyncClient) -> None:
        for name, role, supervisor in animas:
            body = {"name": name, "role": role, "supervisor": supervisor}
            response = await client.post("/api/animas", json=body)
            if response.status_code != 201:
                raise fail(refusal_line(response))
            console.print(styled("created Anima ", (name, "bold"), f" ({role})"))

    if animas:
        through_hub(settings, create)


@app.command()
def start(
    host: Annotated[str | None, typer.Option(help="Address to bind (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 18500).")] = None,
) -> None:
    """Start the hub: API, web chat and every enabled platform, in the foreground."""
    import uvicorn

    from hub import logs
    from hub.api.server import create_app, uvicorn_config
    from hub.app import Hub

    server: dict[str, object] = {}
    if host is not None:
        server["host"] = host
    if port is not None:
        server["port"] = port
    base = settings_or_exit()
    settings = settings_or_exit(server={**base.server.model_dump(), **server}) if server else base
    logs.configure(settings.home)
    url = f"http://{settings.server.host}:{settings.server.port}"
    try:
        with _held(settings, url):
            hub = Hub(settings)  # built, not started: nothing runs until it serves
            if problem := hub.config_problem():  # one line, not Hub.start's traceback
                raise fail(f"config: {problem}", code=2)
            listening = _listen(settings.server.host, settings.server.port)
            console.print(styled("AnimaHub on ", (url, "bold"), f" (data: {settings.home})"))
            app = create_app(hub, on_ready=_print_owner_link)
            config = uvicorn_config(app, settings.server)
            _serve(uvicorn.Server(config), listening)
    except HubBusy as exc:
        try:
            running = running_hub(settings.home)
        except HubBusy:  # still starting up, or a CLI command holds it
            running = None
        if running is not None:
            raise fail(
                f"a hub already runs on {settings.home}, at {running.url} (pid {running.pid})"
            ) from None
        raise fail(f"{exc}; is a hub already running?") from None


def _print_owner_link(hub: Hub) -> None:
    """The banner's last line: the owner's one-time sign-in link, as Jupyter prints one.
    Printed, never logged: whoever opens it is the owner in that browser."""
    from hub.api.signin import owner_signin

    link = owner_signin(hub, "animahub start")
    url = hub.settings.server.link_base()
    console.print(f"API docs at {url}/docs; `animahub signin` prints a new sign-in link")
    console.print("Open this link to chat (it signs you in as the owner, once):")
    console.print(link["url"], style="bold", soft_wrap=True, highlight=False)  # one line


@app.command()
def signin() -> None:
    """Print a new one-time sign-in link for the owner's browser (as `animahub start` does)."""
    from hub.cli.client import hub_client, refusal_line

    async def run() -> dict[str, Any]:
        async with hub_client(settings_or_exit()) as client:
            response = await client.post("/api/signin/owner")
            if response.status_code != 201:
                raise fail(refusal_line(response))
            return dict(response.json())

    link = asyncio.run(run())
    until = link["expires_at"]
    console.print(f"Open this link to sign in as {link['name']} (once, until {until}):")
    console.print(link["url"], style="bold", soft_wrap=True, highlight=False)


class _Stopped(Exception):
    """SIGTERM, raised again by uvicorn once it has shut down."""


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


def _serve(server: uvicorn.Server, listening: socket.socket) -> None:
    """Serve until Ctrl-C (SIGINT) or SIGTERM. uvicorn shuts down cleanly on either, then
    raises the signal again; that stop is how `start` is meant to end, so it exits 0 (it
    exited 130 and `make run` reported an error). A crash still fails."""
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        with contextlib.suppress(KeyboardInterrupt, _Stopped):
            server.run(sockets=[listening])
    finally:
        signal.signal(signal.SIGTERM, previous)


def _listen(host: str, port: int) -> socket.socket:
    """Bind the server's socket here, so a busy port is one clear line (uvicorn would log
    an error and exit) and nothing of the hub has started yet."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as exc:
        listening.close()
        if exc.errno != errno.EADDRINUSE:
            raise fail(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        raise fail(
            f"port {port} on {host} is already in use by another program; choose another "
            f"with `animahub start --port {port + 1}`, or set ANIMAHUB_SERVER__PORT or "
            f"[server] port in hub.toml"
        ) from None
    listening.listen(2048)
    return listening


@anima_app.command("create")
def anima_create(
    name: Annotated[str, typer.Option("--name", help="Lowercase name, e.g. aria.", callback=given)],
    role: Annotated[str, typer.Option("--role", help="researcher, engineer, manager, ...")],
    supervisor: Annotated[str | None, typer.Option(help="The Anima this one reports to.")] = None,
) -> None:
    """Create an Anima from a role template."""
    _create_animas(settings_or_exit(), [(name, role, supervisor)])


@anima_app.command("list")
def anima_list() -> None:
    """List the Animas of this data folder."""
    from rich.table import Table
    from rich.text import Text

    from hub.animas import AnimaRegistry, effective_model
    from hub.roles import load_roles

    settings = settings_or_exit()
    registry = AnimaRegistry(settings.home / "animas", load_roles())
    for problem in registry.load():
        err.print(styled(("warning:", "yellow"), f" {problem}"))
    table = Table("name", "role", "supervisor", "model")
    for anima in registry.all():
        model = effective_model(anima, settings.llm) or Text("offline", style="dim")
        table.add_row(anima.name, anima.spec.role, anima.spec.supervisor or "", model)
    console.print(table)


app.command()(chat)
app.command()(status)


@app.command()
def heartbeat(
    name: Annotated[str, typer.Argument(help="The Anima whose heartbeat to run.", callback=given)],
) -> None:
    """Run one heartbeat now and print what it posted, or that it had nothing to say."""
    from hub.cli.client import hub_client

    settings = settings_or_exit()
    known_anima(settings, name)

    async def run() -> dict[str, Any]:
        async with hub_client(settings, calls_the_model=True) as client:
            response = await client.post(f"/api/animas/{name}/heartbeat")
            if response.status_code != 200:
                raise fail(response.json().get("detail", response.text))
            result: dict[str, Any] = response.json()
            return result

    try:
        result = asyncio.run(run())
    except HubBusy as exc:
        raise fail(str(exc)) from None
    console.print(result["outcome"], style="bold", highlight=False)
    if result["posted"]:
        console.print(result["text"], highlight=False)


@app.command("repair-rag")
def repair_rag(
    anima: Annotated[
        str | None, typer.Option(help="The Anima to re-index (default: all).", callback=given)
    ] = None,
    full: Annotated[bool, typer.Option(help="Drop the whole index first.")] = False,
) -> None:
    """Rebuild the memory index from the markdown, which is left untouched."""
    from hub.cli.memory import repair_rag as run

    try:
        run(settings_or_exit(), anima, full)
    except HubBusy as exc:
        raise fail(str(exc)) from None


@app.command()
def logs(
    name: Annotated[str, typer.Argument(help="The Anima whose log to show.", callback=given)],
    lines: Annotated[
        int, typer.Option("--lines", "-n", help="How many lines (0: none, only new ones with -f).")
    ] = 50,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing.")] = False,
) -> None:
    """Show an Anima's log: turns answered, failures, consolidation runs, schedule problems."""
    if lines < 0:  # sliced, -n -5 printed all the lines but five
        raise fail(f"-n {lines}: the number of lines must be 0 or more", code=2)
    from hub.logs import anima_log_path

    settings = settings_or_exit()
    path = anima_log_path(settings.home, name)
    if not (settings.home / "animas" / name).is_dir():  # one whose anima.toml broke has logs
        raise fail(f"no Anima named {name!r}")
    if not path.exists():
        console.print(f"{name} has no log entries yet ({path})", style="dim")
        if not follow:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    _print_tail(path, lines, follow)


def _print_tail(path: Path, lines: int, follow: bool) -> None:
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in deque(handle, maxlen=lines):  # [-0:] was every line
            console.out(line.rstrip("\n"), highlight=False)
        while follow:
            line = handle.readline()
            if line:
                console.out(line.rstrip("\n"), highlight=False)
            else:
                time.sleep(0.5)


@memory_app.callback()
def _memory_settings(ctx: typer.Context) -> None:
    ctx.obj = settings_or_exit()


def _if_imported(module: str, name: str) -> tuple[type[BaseException], ...]:
    """The exception class `module.name`, once something imported `module`: a command that
    did not cannot have raised it, and importing it here would cost every command its
    import. An `except` clause evaluates this only when an exception reaches it."""
    loaded = sys.modules.get(module)
    return (getattr(loaded, name),) if loaded is not None else ()


def main() -> None:
    try:
        app()
    except _if_imported("sqlalchemy.exc", "OperationalError") as exc:
        # No database server, wrong password, ...: one line, and where to look.
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        print_error(f"the database cannot be reached ({detail}); check [storage] database_url")
        raise SystemExit(1) from None
    except _if_imported("hub.memory.index", "IndexUnavailable") as exc:  # a Qdrant server
        print_error(f"memory's index cannot be reached ({exc}); check [memory] qdrant_url")
        raise SystemExit(1) from None
    except HubBusy as exc:  # no hub runs, but another command (or a hub starting) holds it
        print_error(f"{exc} (another command, or a hub starting); try again when it is done")
        raise SystemExit(1) from None
    except OwnerKeyError as exc:  # readable by others, or emptied
        print_error(str(exc))
        raise SystemExit(1) from None
