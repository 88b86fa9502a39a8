"""The manager's tools: `delegate_task`, `check_tasks`, `cancel_task`.

Offered only to an Anima with subordinates. Who delegates is the turn's Anima and who asked
is the turn's person (ToolContext), never an argument; a refusal is a tool error the model
reads (hub/tasks/delegation.py says which ones).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hub.delivery.targets import parse_target
from hub.memory.text import clip
from hub.model.tool_registry import Tool, ToolContext, ToolRegistry
from hub.store.models import OPEN_TASK_STATES
from hub.tasks.addressing import Asker
from hub.tasks.board import TaskBoard, TaskError, TaskView
from hub.tasks.delegation import Delegation, Refused, Request
from hub.turns.llm import TurnContext

_RELATIVE = re.compile(r"^(?:in\s+)?(\d+)\s*(m|min|minutes?|h|hours?|d|days?)$", re.IGNORECASE)
_UNIT = {"m": "minutes", "h": "hours", "d": "days"}
_LISTED = 20
# "have kai check the build", "ask @aria to draft the notes", "get kai to look at CI"
_PLAIN = re.compile(
    r"(?:^|[\s,;:])(?:please\s+)?(?:have|ask|tell|get)\s+@?(?P<to>[a-z][a-z0-9_-]{0,31})\s+"
    r"(?:to\s+)?(?P<what>\S.*)",
    re.IGNORECASE | re.DOTALL,
)


def plain_request(text: str, animas: list[str]) -> tuple[str, str] | None:
    """(anima, task) when `text` asks for one of `animas` to do something, in words."""
    for match in _PLAIN.finditer(text):
        to = match.group("to").lower()
        if to in animas:
            what = " ".join(match.group("what").split()).rstrip(" .!?")
            what = re.sub(r"\s*,?\s*please$", "", what, flags=re.IGNORECASE)
            return (to, what) if what else None
    return None


# A request to someone who is no Anima: "have zed check the build", "ask zed to …" at the
# start of the message (after an "@kai," or "kai," addressing the Anima, and "please").
# "ask/tell/get" need "to", as "ask zed about it" is no request to do something.
_REQUEST_START = re.compile(
    r"^\s*(?:@[\w-]+[,:]?\s+|[\w-]+[,:]\s*)?(?:please\s+)?(?:have\s+@?(?P<have>[a-z][a-z0-9_-]{0,31})"
    r"|(?:ask|tell|get)\s+@?(?P<to>[a-z][a-z0-9_-]{0,31})\s+to)\s+\S",
    re.IGNORECASE,
)
# Words after "have", "ask", "tell" or "get" that name no one: "have a look", "have lunch
# at noon", "tell me to…", "have to go".
_NO_ONE = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "all",
        "every",
        "no",
        "one",
        "each",
        "my",
        "your",
        "our",
        "their",
        "his",
        "her",
        "its",
        "me",
        "you",
        "him",
        "us",
        "them",
        "it",
        "i",
        "we",
        "they",
        "everyone",
        "everybody",
        "someone",
        "somebody",
        "anyone",
        "anybody",
        "nobody",
        "people",
        "team",
        "to",
        "not",
        "been",
        "had",
        "got",
        "fun",
        "lunch",
        "dinner",
        "breakfast",
        "coffee",
        "tea",
        "time",
        "more",
        "less",
        "lots",
    ]
)


def unknown_anima(text: str, animas: list[str]) -> str | None:
    """The name a message asks to do something ("have zed check the build") when no Anima
    is called that: said plainly rather than taken for a note."""
    match = _REQUEST_START.match(text)
    if match is None:
        return None
    name = (match.group("have") or match.group("to")).lower()
    return None if name in animas or name in _NO_ONE else name


def parse_due(text: str, now: datetime, zone: tzinfo = UTC) -> datetime | None:
    """`2026-12-03T17:00`, `2026-12-03` (its end), `in 2 hours`, `30m`; a time without an
    offset is in `zone`. ValueError for anything else, and for a time already past: a task
    due before it starts would be late at once."""
    text = text.strip()
    if not text:
        return None
    relative = _RELATIVE.match(text)
    if relative:
        unit = _UNIT[relative.group(2)[0].lower()]
        return now + timedelta(**{unit: int(relative.group(1))})
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"due {text!r} is not a time: use ISO 8601 (2026-12-03T17:00) or 'in 2 hours'"
        ) from None
    if len(text) == 10:  # a day: due when it ends (today's, in `zone`, is still to come)
        moment = moment + timedelta(days=1) - timedelta(minutes=1)
    moment = moment if moment.tzinfo else moment.replace(tzinfo=zone)
    if moment < now:
        local = now.astimezone(zone).strftime("%Y-%m-%d %H:%M")
        raise ValueError(f"due {text!r} is in the past (it is {local} {zone} now)")
    return moment


def _zone(name: str) -> tzinfo:
    """The Anima's timezone, which `current_time` tells the model (checked as it loads)."""
    try:
        return ZoneInfo(name) if name else UTC
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def _targets(value: Any) -> tuple[str, ...]:
    written = [str(v).strip() for v in (value or []) if str(v).strip()]
    for target in written:
        parse_target(target)  # ValueError with both forms named
    return tuple(written)


def offline_delegation(
    tools: ToolRegistry, delegation: Callable[[], Delegation]
) -> Callable[[TurnContext], Awaitable[str | None]]:
    """What the offline mode does for a manager asked in plain words ("have kai check the
    build"): the same `delegate_task` call a model would make; None for any other text."""

    async def act(ctx: TurnContext) -> str | None:
        # Any Anima named, not only subordinates: "ask zed to …" of a manager zed does not
        # report to is refused with the reason, not answered "Noted".
        tasks = delegation()
        asked = plain_request(ctx.text, tasks.animas())
        if asked is None:
            stranger = unknown_anima(ctx.text, tasks.animas())
            return None if stranger is None else f"error: {tasks.no_such(ctx.anima, stranger)}"
        to, title = asked
        if not tasks.subordinates(ctx.anima):  # no delegate_task to call: it manages nobody
            return f"error: {tasks.not_subordinate(ctx.anima, to)}"
        return await tools.call("delegate_task", json.dumps({"to": to, "title": title}), ctx.tools)

    return act


def task_tools(delegation: Delegation, board: TaskBoard, now: Callable[[], datetime]) -> list[Tool]:
    def manages(ctx: ToolContext) -> bool:
        return bool(delegation.subordinates(ctx.anima))

    async def delegate(args: dict[str, Any], ctx: ToolContext) -> str:
        title = str(args.get("title") or "").strip()
        to = str(args.get("to") or "").strip().lower()
        if not title or not to:
            return "error: delegate_task needs `to` (a subordinate) and `title`"
        try:
            due = parse_due(str(args.get("due") or ""), now(), _zone(ctx.timezone))
            report_to = _targets(args.get("report_to"))
            parent = board.get(ctx.task_id) if ctx.task_id is not None else None
            made = delegation.delegate(
                Request(
                    manager=ctx.anima,
                    to=to,
                    title=title,
                    details=str(args.get("details") or ""),
                    due_at=due,
                    report_to=report_to,
                    asker=_asker(ctx, parent),
                    requested_by=parent.requested_by if parent else ctx.person_id,
                    origin=(parent.origin if parent else _origin(ctx))
                    or delegation.home_channel(ctx.anima, to),
                    parent_id=ctx.task_id,
                    turn=ctx.turn,
                ),
                actor=ctx.anima,
            )
        except (TaskError, ValueError) as exc:
            return f"error: {exc}"
        task = made.task
        if not made.new:
            return f"already delegated: task {task.id} for {task.assignee} ({task.state.value})"
        return (
            f"task {task.id} for {task.assignee}: {task.title}. "
            f"{delegation.starting(task.assignee)}; "
            "the report is posted here"
            + (f" and to {', '.join(task.report_to)}" if task.report_to else "")
            + ", and comes back to you."
        )

    async def check(args: dict[str, Any], ctx: ToolContext) -> str:
        which = str(args.get("state") or "open")
        states = tuple(OPEN_TASK_STATES) if which == "open" else ()
        tasks = board.listing(states=states, manager=ctx.anima, limit=_LISTED)
        if not tasks:
            return "no open tasks" if which == "open" else "no tasks"
        return "\n".join(_line(task, ctx) for task in tasks)

    async def cancel(args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            task_id = int(args.get("task_id") or 0)
            task = delegation.cancel(
                task_id, ctx.anima, str(args.get("reason") or ""), manager=ctx.anima
            )
        except (Refused, TaskError, ValueError) as exc:
            return f"error: {exc}"
        return f"task {task.id} cancelled"

    return [
        Tool(
            name="delegate_task",
            description=(
                "Hand a task to one of your direct subordinates. It starts at once; its "
                "report is posted to this conversation (and report_to) and comes back to you."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "to": {"type": "string", "description": "a direct subordinate's name"},
                    "title": {"type": "string", "description": "the task in one line"},
                    "details": {"type": "string", "description": "what done looks like"},
                    "due": {"type": "string", "description": "ISO 8601, or 'in 2 hours'"},
                    "report_to": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "more targets (platform:workspace/channel, "
                        "dm:<platform>:<user id>): only places the person you act for may "
                        "post (their own DMs, channels they wrote in); others need an admin",
                    },
                },
                "required": ["to", "title"],
            },
            handler=delegate,
            available=manages,
        ),
        Tool(
            name="check_tasks",
            description="The tasks you delegated: state, assignee, and the reports so far.",
            parameters={
                "type": "object",
                "properties": {"state": {"type": "string", "enum": ["open", "all"]}},
            },
            handler=check,
            available=manages,
        ),
        Tool(
            name="cancel_task",
            description="Cancel an open task you delegated.",
            parameters={
                "type": "object",
                "properties": {
                    "task_id": {"type": "integer"},
                    "reason": {"type": "string"},
                },
                "required": ["task_id"],
            },
            handler=cancel,
            available=manages,
        ),
    ]


def _asker(ctx: ToolContext, parent: TaskView | None) -> Asker:
    """Who names the targets: the turn's person in their conversation; in a task's turn the
    person who asked for the task, within where that task reports (the turn's own targets).
    An admin's rights are not handed down to a task's turn: what it reads is not theirs."""
    if parent is not None:
        granted = (*parent.report_to, *ctx.addressable)
        return Asker(parent.requested_by, False, parent.origin, granted, ctx.anima)
    return Asker(ctx.person_id, ctx.person_is_admin, _origin(ctx), ctx.addressable, ctx.anima)


def _origin(ctx: ToolContext) -> str:
    """The conversation a turn answers, as an address; a scheduled turn has none."""
    return "" if ctx.conversation.startswith(("schedule:", "task:")) else ctx.conversation


def _line(task: TaskView, ctx: ToolContext) -> str:
    line = f"task {task.id} [{task.state.value}] {task.title} ({task.assignee})"
    # A report is shown where it was asked for, or to the person who asked: what was asked
    # in a DM is read out in that person's DMs only.
    here = task.origin == ctx.conversation or (
        ctx.is_dm and ctx.person_id is not None and task.requested_by == ctx.person_id
    )
    if task.result and here:
        line += f": {clip(task.result, 300)}"
    return line
