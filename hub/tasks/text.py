"""The words of a task: what the assignee is given, and what is posted about it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hub.memory.excerpt import literal
from hub.memory.text import clip
from hub.redaction.redact import redact
from hub.tasks.board import TaskView
from hub.turns.offline import answering

_RECALLED_SHOWN = 5
_OFFLINE = "No language model is configured, so this report is the task as given"


def _due(task: TaskView) -> str:
    return f"Due {task.due_at:%Y-%m-%d %H:%M} UTC." if task.due_at else ""


def task_prompt(task: TaskView, requester: str) -> str:
    """The assignee's input: the task as given, and what its answer is for."""
    parts = [f"Task {task.id} from {task.manager}: {task.title}"]
    if task.details.strip():
        parts.append(task.details.strip())
    asked = f"{requester} asked for it." if requester else ""
    ask = (
        "Do it now with what you know and your tools, then answer with your report: what "
        "you did, what you found, what is still open. Your answer is posted as the report, "
        "to the conversation that asked and the task's report targets."
    )
    parts.append(" ".join(s for s in (asked, _due(task), ask) if s))
    return "\n\n".join(parts)


def task_query(task: TaskView) -> str:
    """What a task's run recalls memory for: the task's own words, not the instructions
    around them (`task_prompt`'s "what you did, what you found…" matched any report and
    any question asked before)."""
    return "\n".join(part for part in (task.title.strip(), task.details.strip()) if part)


def offline_report(task: TaskView, recalled: Sequence[str]) -> str:
    """The report with no model: the task as given and what memory holds about it, said
    plainly, so the board and the reports work before a model is set. Only what shares a
    search term with the task is listed (the offline answer's rule, hub/turns/offline.py), and
    every text from elsewhere (the details, what was recalled) is put in as literal text,
    so no mark in it opens a span the report leaves unclosed (hub/memory/excerpt.py `literal`)."""
    lines = [f"{_OFFLINE} and what I remember about it.", ""]
    # Earlier offline reports say nothing a digest needs: the task as given, again.
    recalled = [line for line in recalled if _OFFLINE not in line]
    related = answering(task_query(task), recalled, task.assignee)
    if task.details.strip():
        lines += [f"Asked: {literal(clip(task.details.strip(), 400))}", ""]
    if related:
        lines.append("What I remember that seems related:")
        lines += [f"- {_listed(line)}" for line in related[:_RECALLED_SHOWN]]
    else:
        lines.append("I remember nothing related to it yet.")
    return "\n".join(lines)


# A speaker's label in a recalled line: "**Dana** (a direct conversation on web):" and
# "**kai**:". Shown as plain names, as the rest of the line is shown as plain text.
_LABEL = re.compile(r"\*\*([^*\n]{1,80})\*\*(?=:| \()")


def _listed(line: str) -> str:
    """A recalled line as the report lists it: on one line, redacted, its speakers named
    plainly, cut to 200 characters, as literal text."""
    flat = " ".join(redact(line)[0].split())
    return literal(clip(_LABEL.sub(lambda m: m[1], flat), 200))


def posted_report(task: TaskView, report: str) -> str:
    title = literal(task.title)
    return f"**{task.assignee}'s report on task {task.id}: {title}**\n\n{report.strip()}"


def failed_text(task: TaskView, reason: str, requester: str) -> str:
    who = f"{task.manager}" + (f" and {requester}" if requester else "")
    tries = "once" if task.attempts == 1 else f"{task.attempts} times"
    return (
        f"**Task {task.id} failed: {literal(task.title)}**\n\n"
        f"{task.assignee} could not do it: {clip(reason, 300)} (tried {tries}). {who}: it "
        f"needs a decision. Run it again with `animahub task retry {task.id}`, or hand it "
        "to someone else."
    )


def late_text(task: TaskView, requester: str) -> str:
    who = f"{task.manager}" + (f" and {requester}" if requester else "")
    return (
        f"**Task {task.id} is past due: {literal(task.title)}**\n\n"
        f"It was due {task.due_at:%Y-%m-%d %H:%M} UTC and is {task.state.value} "
        f"({task.assignee}, attempt {task.attempts}). {who}: it is still on the board; "
        f"`animahub task show {task.id}` shows every step."
    )
