"""`animahub task …`: the task board (hub/tasks/board.py), through the hub's API as the owner."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from hub.cli.console import HELP_MARKUP, console, given, styled
from hub.cli.hub_api import call, cli_settings
from hub.cli.people import short_time
from hub.cli.runfile import running_hub

task_app = typer.Typer(
    rich_markup_mode=HELP_MARKUP,
    help="The task board: what managers delegated.",
    no_args_is_help=True,
)


@task_app.command("list")
def task_list(
    state: Annotated[
        str | None, typer.Option(help="todo, running, blocked, review, done, failed, cancelled.")
    ] = None,
    assignee: Annotated[str | None, typer.Option(help="Only this Anima's tasks.")] = None,
) -> None:
    """Tasks, newest first."""
    query = "&".join(f"{k}={v}" for k, v in (("state", state), ("assignee", assignee)) if v)
    rows = call("GET", "/api/tasks" + (f"?{query}" if query else ""))
    if not rows:
        console.print("no tasks", highlight=False)
        return
    table = Table("id", "state", "title", "from", "to", "tries", "updated")
    for row in rows:
        table.add_row(
            str(row["id"]),
            row["state"],
            row["title"],
            row["manager"],
            row["assignee"],
            str(row["attempts"]),
            short_time(row["updated_at"]),
        )
    console.print(table)


@task_app.command("show")
def task_show(task_id: Annotated[int, typer.Argument(help="The task's id.")]) -> None:
    """One task, and every step it went through."""
    task = call("GET", f"/api/tasks/{task_id}")
    _print_task(task)
    table = Table("when", "who", "from", "to", "note")
    for step in task["steps"]:
        table.add_row(
            short_time(step["at"]), step["actor"], step["from"] or "", step["to"], step["note"]
        )
    console.print(table)


@task_app.command("delegate")
def task_delegate(
    name: Annotated[str, typer.Argument(help="The Anima who does it.", callback=given)],
    title: Annotated[str, typer.Argument(help="The task in a line.")],
    details: Annotated[str, typer.Option(help="What done looks like.")] = "",
    due: Annotated[str, typer.Option(help="ISO 8601, or 'in 2 hours'.")] = "",
    report_to: Annotated[
        list[str] | None,
        typer.Option(help="Where the report goes (repeatable): an address, dm:…, notion:…"),
    ] = None,
) -> None:
    """Give an Anima a task for its supervisor; it starts at once."""
    body = {"to": name, "title": title, "details": details, "due": due}
    task = call("POST", "/api/tasks", {**body, "report_to": report_to or []}, ok=201)
    from hub.tasks.delegation import STARTS_WITH_THE_HUB  # the task model: only when one was given

    waits = f" (no hub is running: it {STARTS_WITH_THE_HUB})"
    console.print(
        f"task {task['id']} for {task['assignee']} (reports to {task['manager']}): "
        f"{task['title']}" + ("" if running_hub(cli_settings().home) else waits),
        highlight=False,
    )


@task_app.command("retry")
def task_retry(task_id: Annotated[int, typer.Argument(help="The task's id.")]) -> None:
    """Run a failed task again."""
    task = call("POST", f"/api/tasks/{task_id}/retry", {})
    console.print(f"task {task['id']} is {task['state']} again", highlight=False)


@task_app.command("cancel")
def task_cancel(
    task_id: Annotated[int, typer.Argument(help="The task's id.")],
    reason: Annotated[str, typer.Option(help="Why (kept with the task).")] = "",
) -> None:
    """Cancel an open task."""
    task = call("POST", f"/api/tasks/{task_id}/cancel", {"reason": reason})
    console.print(f"task {task['id']} is {task['state']}", highlight=False)


def _print_task(task: dict[str, Any]) -> None:
    console.print(styled((f"task {task['id']}", "bold"), f": {task['title']}"), highlight=False)
    console.print(
        f"{task['state']} · {task['manager']} → {task['assignee']} · tries {task['attempts']}"
        + (f" · due {short_time(task['due_at'])}" if task["due_at"] else ""),
        highlight=False,
    )
    if task["details"]:
        console.print(task["details"], highlight=False)
    if task["result"]:
        console.print(f"report: {task['result']}", highlight=False)
