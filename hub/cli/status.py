"""`animahub status`: whether a hub runs on this data folder, and its health."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from hub.cli.console import console, fail, settings_or_exit
from hub.cli.runfile import HubBusy, running_hub


def status() -> None:
    """Whether a hub runs on this data folder, and its health (exit code 3 when none runs)."""
    settings = settings_or_exit()
    try:
        running = running_hub(settings.home)
    except HubBusy as exc:  # locked, but not saying where: starting up, or a CLI command
        raise fail(str(exc), code=3) from None
    if running is None:
        console.print(f"No hub is running on {settings.home}.", highlight=False)
        raise typer.Exit(3)
    import httpx  # only to ask a running hub

    from hub.cli.client import auth_headers, refusal_line

    try:
        response = httpx.get(
            f"{running.url}/api/system/health", headers=auth_headers(settings), timeout=5
        )
    except httpx.HTTPError as exc:
        raise fail(f"the hub at {running.url} (pid {running.pid}) does not answer: {exc}") from None
    if response.status_code != 200:  # the hub's words (a 401: which token to set), one line
        raise fail(f"the hub at {running.url} (pid {running.pid}): {refusal_line(response)}")
    console.print(_status_table(running.url, running.pid, settings.home, response.json()))


def _status_table(url: str, pid: int, home: Path, health: dict[str, Any]) -> Table:
    from hub.redaction.redact import redact  # its rule set: only when there is a table to print

    table = Table(
        title=f"AnimaHub {health['version']} at {url} (pid {pid}, data {home})",
        show_header=False,
        title_justify="left",
    )
    workers = health.get("model_workers")
    model = health["llm"]
    if model == "offline":  # no worker is started: there is nothing for one to call
        model = "offline mode (no language model configured: set [llm] model in hub.toml)"
    elif workers and not workers["running"]:  # an idle hub holds none (hub/model/pool.py)
        model += " (no model worker running: one starts with the next model call)"
    elif workers:
        model += f" ({workers['ready']} of {workers['configured']} model workers ready)"
    if lines := _model_lines(health.get("model")):
        model += "\n" + lines
    deliveries = health["deliveries"]
    waiting = {name: n for name, n in health["mailboxes"].items() if n}
    database = health["database"]
    if health.get("database_error"):
        database += f"  unreachable: {health['database_error']}"
    status = health["status"]
    if health.get("problems"):
        status += f" ({', '.join(health['problems'])})"
    rows = [
        ("status", status),
        ("model", model),
        ("database", database),
        ("platforms", _platform_lines(health.get("platforms", {}))),
        ("parts", _part_lines(health.get("parts", {}))),
        ("animas", ", ".join(health["animas"])),
        (
            "deliveries",
            "unknown (no database)"
            if deliveries is None
            else ", ".join(f"{n} {k}" for k, n in sorted(deliveries.items())) or "none",
        ),
        ("turns waiting", ", ".join(f"{a}: {n}" for a, n in sorted(waiting.items())) or "none"),
        ("tasks", _task_line(health.get("tasks"))),
        ("credentials", _credential_lines(health.get("credentials", {}))),
        ("failed updates", _failed_line(health.get("failed_updates"))),
        ("failed turns", _failed_turns_line(health.get("failed_turns"))),
    ]
    for key, value in rows:
        # What the hub sent is redacted there; this CLI knows the credentials too (it loaded
        # the settings), so a hub of an older version cannot make it print one.
        table.add_row(key, redact(value)[0])
    return table


def _credential_lines(credentials: dict[str, str]) -> str:
    """`telegram.bot_token  sha256:1a2b3c4d`: which credential is in use, never its value
    (`animahub status` on the same data folder computes the same fingerprint)."""
    return "\n".join(f"{key}  {shown}" for key, shown in credentials.items()) or "none"


def _failed_line(failed: dict[str, Any] | None) -> str:
    """Platform updates the hub could not handle in the last day (hub/inbound/failed_updates.py)."""
    if not failed or not failed.get("count"):
        return "none"
    latest = failed["latest"]
    return (
        f"{failed['count']} in the last day, kept and skipped; latest {latest['platform']} "
        f"update {latest['update']}: {latest['error']} (GET /api/audit?action=update.failed)"
    )


def _failed_turns_line(failed: dict[str, Any] | None) -> str:
    """Messages given up on in the last day, the latest's error and fix (hub/turns/retry.py)."""
    if not failed or not failed.get("count"):
        return "none"
    latest = failed["latest"]
    return f"{failed['count']} in the last day; latest ({latest['anima']}): {latest['error']}"


def _task_line(tasks: dict[str, int] | None) -> str:
    if tasks is None:
        return "unknown (no database)"
    order = ("running", "todo", "blocked", "review", "failed", "done", "cancelled")
    shown = [f"{tasks[state]} {state}" for state in order if tasks.get(state)]
    return ", ".join(shown) or "none"


def _platform_lines(platforms: dict[str, Any]) -> str:
    """One line a platform: `slack  down since 11:59:58 UTC: Slack cannot be reached: …
    (next try 12:00:05 UTC)`."""
    lines = []
    for name, p in sorted(platforms.items()):
        line = f"{name}  {p['state']}"
        if p["state"] != "up" and p.get("since"):
            line += f" since {p['since'][11:19]} UTC"
        if p["reason"]:
            line += f": {p['reason']}"
        if p["next_retry_at"]:
            line += f" (next try {p['next_retry_at'][11:19]} UTC)"
        lines.append(line)
    return "\n".join(lines) or "none"


def _part_lines(parts: dict[str, Any]) -> str:
    """`outbox  failing since 12:00:05 UTC: OperationalError: … (restarted 3 times)`."""
    lines = []
    for name, p in sorted(parts.items()):
        line = f"{name}  {p['state']}"
        if p["state"] != "running":
            line += f" since {p['since'][11:19]} UTC: {p['reason']}"
        if p["restarts"]:
            line += f" (restarted {p['restarts']} times)"
        lines.append(line)
    return "\n".join(lines) or "none"


def _model_lines(model: dict[str, Any] | None) -> str:
    """One line a model (hub/model/health.py): `openai/gpt-4o  down since 12:00:05 UTC: key
    refused (model error (401): …); fix: set a valid key in [llm] api_key … (next check
    12:00:35 UTC)`; `ok` and `unchecked` in a word."""
    lines = []
    for name, m in sorted(((model or {}).get("models") or {}).items()):
        line = f"{name}  {m['state']}"
        if m["state"] in ("degraded", "down"):
            line += f" since {(m['since'] or '')[11:19]} UTC: {m['reason']}"
            line += f" ({m['detail']})" if m.get("detail") else ""
            line += f"; fix: {m['fix']}"
            if m.get("next_check"):
                line += f" (next check {m['next_check'][11:19]} UTC)"
        lines.append(line)
    return "\n".join(lines)
