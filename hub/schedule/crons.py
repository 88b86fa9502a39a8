"""Scheduled tasks of an Anima: animas/<name>/crons/*.md (DESIGN §5, docs/crons.md).

Each file holds any number of crons, one per `## Title` section::

    # Anything before the first "## " heading is ignored (a title, notes).

    ## Morning digest
    schedule: 0 9 * * 1-5
    type: llm
    post_to: web:local/general, slack:T012AB/C0456CD
    Summarize what happened yesterday and list open questions for the team.
    The body may span several lines and contain markdown.

    ## Weekly heartbeat check
    schedule: 30 17 * * fri
    type: command
    /anima heartbeat aria

The lines right after the heading are `key: value` pairs, in any order; keys are
case-insensitive. The key block ends at the first line that is not a known key, or at a blank
line; everything after it, up to the next `## ` heading, is the body. A `## ` line inside a
fenced code block (``` or ~~~) belongs to the body.

- `schedule` (required): a five-field crontab expression, minute hour day month weekday, read
  in the Anima's timezone. Weekdays count as in crontab (0 or 7 = Sunday, 1 = Monday) or by
  name (`mon`-`sun`). An expression that restricts both the day of month and the weekday is
  refused: crontab runs when either matches, APScheduler only when both do.
- `type` (required): `llm` runs a turn with the body as its input and posts the reply;
  `command` runs the hub command on the body's single non-empty line (`/anima status aria`).
- `post_to` (optional; `report_to` is the same key): comma-separated addresses
  (`web:local/general, slack:T1/C2`, `notion:notion/<data source id>`) or a person's DM
  (`dm:telegram:123456789`, hub/delivery/targets.py); without it the result goes to the Anima's
  heartbeat channels.

A `word:` line in the key block that is not a known key is an error when it looks like a
misspelt key (`shedule:`) and the start of the body otherwise. A bad section becomes a
`CronProblem` with its file, line and reason; the other sections still load. `CronBook`
re-reads a folder's files when they change and logs every problem to the Anima's log.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from apscheduler.triggers.cron import (
    CronTrigger,
)

from hub.delivery.targets import Target, parse_target
from hub.memory.slugs import slug
from hub.messages import Command
from hub.settings import check_timezone

log = logging.getLogger(__name__)

CronKind = Literal["llm", "command"]
KEYS = ("schedule", "type", "post_to", "report_to")
_SAME_AS = {"report_to": "post_to"}  # what the task board calls report targets
KINDS: tuple[CronKind, ...] = ("llm", "command")

_HEADING_RE = re.compile(r"^ {0,3}##(?:[ \t]+(?P<title>.*?))?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_KEY_RE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9_-]*)[ \t]*:(?P<value>.*)$")

# Crontab numbers weekdays from Sunday = 0 (7 also Sunday); APScheduler 3 from Monday = 0.
_CRONTAB_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_APSCHEDULER_ORDER = (1, 2, 3, 4, 5, 6, 0)


class ScheduleError(ValueError):
    """A schedule that is not a five-field crontab expression this hub can run."""


@dataclass(frozen=True, slots=True)
class CronProblem:
    """A section (or file) that did not load, and why."""

    file: Path
    line: int  # 1-based; 0 when the problem is with the whole file
    reason: str

    def __str__(self) -> str:
        where = f"{self.file.parent.name}/{self.file.name}"
        return f"{where}:{self.line}: {self.reason}" if self.line else f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class CronJob:
    anima: str
    file: Path  # absolute
    line: int  # line of the "## " heading, 1-based
    title: str
    schedule: str  # the cron expression as written
    kind: CronKind
    post_to: tuple[Target, ...]  # addresses and dm:<platform>:<user id> targets
    body: str  # the task text (llm) or the command line (command)
    command: Command | None

    @property
    def key(self) -> str:
        """A stable id: survives edits of the body and schedule, changes with the title."""
        return f"cron:{self.anima}:{self.file.name}:{title_slug(self.title)}"

    def trigger(self, timezone: str) -> CronTrigger:
        return cron_trigger(self.schedule, timezone)


def title_slug(title: str) -> str:
    """The title's slug (CJK kept); a short hash for a title with no letters or digits."""
    return slug(title) or "t-" + hashlib.sha1(title.encode()).hexdigest()[:8]


# --- schedules -----------------------------------------------------------------------------


def cron_trigger(expr: str, timezone: str) -> CronTrigger:
    """An APScheduler trigger for a five-field crontab expression, with crontab weekdays.

    Raises ScheduleError with a reason that quotes the expression, and ValueError for an
    unknown timezone.
    """
    check_timezone(timezone)
    fields = expr.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"schedule {expr!r} has {len(fields)} field(s); expected 5: "
            "minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5'"
        )
    if fields[2] != "*" and fields[4] != "*":
        raise ScheduleError(
            f"schedule {expr!r} sets both the day of month and the day of week; crontab runs "
            "when either matches and this scheduler only when both do, so use two crons"
        )
    try:
        weekdays = _weekdays(fields[4])
    except ValueError as exc:
        raise ScheduleError(f"schedule {expr!r}: day of week {fields[4]!r}: {exc}") from exc
    try:
        trigger: CronTrigger = CronTrigger.from_crontab(
            " ".join([*fields[:4], weekdays]), timezone=timezone
        )
    except ValueError as exc:
        raise ScheduleError(f"schedule {expr!r}: {exc}") from exc
    return trigger


def _weekdays(text: str) -> str:
    """A crontab day-of-week field as APScheduler weekday names, e.g. '1-5' -> 'mon,...,fri'."""
    if text == "*":
        return text
    days: set[int] = set()
    for item in text.split(","):
        part, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) < 1:
                raise ValueError(f"bad step {step_text!r}")
            step = int(step_text)
        if part == "*":
            first, last = 0, 7
        elif "-" in part:
            low, _, high = part.partition("-")
            first, last = _weekday(low), _weekday(high)
            if last == 0 and first > 0:  # 'fri-sun', '5-0': Sunday closes the week
                last = 7
            if last < first:
                raise ValueError(f"range {part!r} runs backwards")
        elif slash:
            raise ValueError(f"a step needs '*' or a range, not {part!r}")
        else:
            first = last = _weekday(part)
        days.update(day % 7 for day in range(first, last + 1, step))
    return ",".join(_CRONTAB_DAYS[day] for day in _APSCHEDULER_ORDER if day in days)


def _weekday(text: str) -> int:
    """0-7 as written (0 and 7 are Sunday), or a three-letter name."""
    name = text.strip().lower()
    if name in _CRONTAB_DAYS:
        return _CRONTAB_DAYS.index(name)
    if name.isdigit() and int(name) <= 7:
        return int(name)
    raise ValueError(f"{text!r} is not a weekday (0-7 or sun-sat)")


# --- parsing -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Section:
    line: int
    title: str
    lines: list[tuple[int, str]] = field(default_factory=list)


def parse_cron_file(
    anima: str, path: Path, timezone: str
) -> tuple[list[CronJob], list[CronProblem]]:
    """Read and parse one crons/*.md file; an unreadable file is one problem."""
    path = path.absolute()
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [CronProblem(path, 0, f"cannot read: {exc.strerror or exc}")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return [], [CronProblem(path, line, "not UTF-8 text")]
    return parse_cron_text(anima, path, text, timezone)


def parse_cron_text(
    anima: str, path: Path, text: str, timezone: str
) -> tuple[list[CronJob], list[CronProblem]]:
    """Parse the text of one crons/*.md file: the good sections and one problem per fault."""
    check_timezone(timezone)
    path = path.absolute()
    jobs: list[CronJob] = []
    problems: list[CronProblem] = []
    sections, stray = _split(text.removeprefix("\ufeff"))
    for number, key in stray:
        problems.append(
            CronProblem(
                path,
                number,
                f"'{key}:' before the first '## ' heading is ignored: "
                "each cron starts with a '## Title' line",
            )
        )
    seen: dict[str, int] = {}
    for section in sections:
        found: list[CronProblem] = []
        if not section.title:
            found.append(CronProblem(path, section.line, "a '## ' heading needs a title"))
        else:
            key = title_slug(section.title)
            if key in seen:
                found.append(
                    CronProblem(
                        path,
                        section.line,
                        f"duplicate title {section.title!r} (first on line {seen[key]})",
                    )
                )
            else:
                seen[key] = section.line
        job = _parse_section(anima, path, section, timezone, found)
        if found:
            problems.extend(found)
        elif job is not None:
            jobs.append(job)
    return jobs, problems


def _split(text: str) -> tuple[list[_Section], list[tuple[int, str]]]:
    """The `## ` sections of a file, and the known keys written before the first of them."""
    sections: list[_Section] = []
    stray: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opener = _FENCE_RE.match(line)
        if opener is not None:
            mark = opener["fence"]
            if fence is None:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark) :]:
                fence = None
        elif fence is None and (heading := _HEADING_RE.match(line)) is not None:
            title = re.sub(r"[ \t]+#+$", "", heading["title"] or "").strip()
            sections.append(_Section(number, title))
            continue
        if sections:
            sections[-1].lines.append((number, line))
        elif fence is None and (key := _KEY_RE.match(line.strip())) and key["key"].lower() in KEYS:
            stray.append((number, key["key"].lower()))
    return sections, stray


def _parse_section(
    anima: str, path: Path, section: _Section, timezone: str, found: list[CronProblem]
) -> CronJob | None:
    def problem(line: int, reason: str) -> None:
        found.append(CronProblem(path, line, reason))

    name = repr(section.title) if section.title else f"on line {section.line}"
    values: dict[str, tuple[int, str]] = {}
    misspelt: set[str] = set()  # known keys written wrongly: not reported missing as well
    lines = section.lines
    index = 0
    while index < len(lines) and not lines[index][1].strip():
        index += 1
    while index < len(lines):
        number, line = lines[index]
        match = _KEY_RE.match(line.strip())
        if match is None:
            break
        key = match["key"].lower()
        key = _SAME_AS.get(key, key)
        if key in KEYS:
            if key in values:
                problem(number, f"{key} given twice (first on line {values[key][0]})")
            else:
                values[key] = (number, match["value"].strip())
        elif close := difflib.get_close_matches(key, KEYS, n=1):
            misspelt.add(close[0])
            problem(number, f"unknown key {match['key']!r} (did you mean {close[0]!r}?)")
        else:
            break
        index += 1
    body_lines = lines[index:]
    while body_lines and not body_lines[0][1].strip():
        body_lines.pop(0)
    while body_lines and not body_lines[-1][1].strip():
        body_lines.pop()

    schedule = ""
    if "schedule" not in values:
        if "schedule" not in misspelt:
            problem(
                section.line, f"cron {name} has no 'schedule:' line, e.g. 'schedule: 0 9 * * 1-5'"
            )
    else:
        number, schedule = values["schedule"]
        try:
            cron_trigger(schedule, timezone)
        except ScheduleError as exc:
            problem(number, str(exc))

    kind: CronKind | None = None
    if "type" not in values:
        if "type" not in misspelt:
            problem(
                section.line, f"cron {name} has no 'type:' line: add 'type: llm' or 'type: command'"
            )
    else:
        number, value = values["type"]
        for known in KINDS:
            if value.lower() == known:
                kind = known
        if kind is None:
            problem(number, f"type {value!r} is not 'llm' or 'command'")

    post_to: list[Target] = []
    if "post_to" in values:
        number, value = values["post_to"]
        items = [item.strip() for item in value.split(",") if item.strip()]
        if not items:
            problem(number, "post_to is empty: leave the line out to post to heartbeat channels")
        for item in items:
            try:
                post_to.append(parse_target(item))
            except ValueError:
                problem(
                    number,
                    f"post_to {item!r} is not an address (platform:workspace/channel, "
                    "e.g. 'web:local/general', or dm:<platform>:<user id>, "
                    "e.g. 'dm:telegram:123456789')",
                )

    body = "\n".join(line for _, line in body_lines)
    command: Command | None = None
    if kind == "llm" and not body:
        problem(section.line, f"cron {name} has no task text below its keys")
    elif kind == "command":
        command, body = _parse_command(name, section.line, body_lines, problem)

    if found or kind is None:
        return None
    return CronJob(
        anima=anima,
        file=path,
        line=section.line,
        title=section.title,
        schedule=schedule,
        kind=kind,
        post_to=tuple(post_to),
        body=body,
        command=command,
    )


def _parse_command(
    name: str, heading: int, body_lines: list[tuple[int, str]], problem: Callable[[int, str], None]
) -> tuple[Command | None, str]:
    if not body_lines:
        problem(heading, f"cron {name} has no command below its keys, e.g. '/anima status aria'")
        return None, ""
    number, line = body_lines[0]
    text = line.strip()
    extra = [n for n, rest in body_lines[1:] if rest.strip()]
    if extra:
        problem(extra[0], "more text after the command: a command cron runs exactly one command")
    if not text.startswith("/"):
        problem(number, f"{text!r} is not a hub command: it must start with '/'")
        return None, text
    try:
        words = shlex.split(text[1:])
    except ValueError as exc:
        problem(number, f"cannot read command {text!r}: {exc}")
        return None, text
    if not words or text[1:2].isspace():
        problem(number, f"command {text!r} has no name after '/'")
        return None, text
    return Command(words[0], tuple(words[1:])), text


# --- watching ------------------------------------------------------------------------------


class CronBook:
    """All crons of one Anima folder; reload() re-reads only when a file changed."""

    def __init__(self, anima: str, folder: Path, timezone: str) -> None:
        self.anima = anima
        self.folder = folder.absolute()  # animas/<name>/crons
        self.timezone = check_timezone(timezone)
        self.jobs: list[CronJob] = []
        self.problems: list[CronProblem] = []
        self._files: dict[Path, tuple[tuple[int, int], list[CronJob], list[CronProblem]]] = {}

    def reload(self) -> bool:
        """Re-read added and modified files, forget removed ones; True if anything changed.

        Every problem of a re-read file is logged at ERROR level to the Anima's log.
        """
        current: dict[Path, tuple[int, int]] = {}
        if self.folder.is_dir():
            for path in sorted(self.folder.glob("*.md")):
                if path.name.startswith("."):
                    continue
                try:
                    stat = path.stat()
                except OSError:  # removed between listing and stat
                    continue
                if path.is_file():
                    current[path] = (stat.st_mtime_ns, stat.st_size)
        changed = False
        for path in list(self._files):
            if path not in current:
                del self._files[path]
                changed = True
                log.info(
                    "Anima %s: crons/%s removed", self.anima, path.name, extra={"anima": self.anima}
                )
        for path, signature in current.items():
            known = self._files.get(path)
            if known is not None and known[0] == signature:
                continue
            changed = True
            jobs, problems = parse_cron_file(self.anima, path, self.timezone)
            self._files[path] = (signature, jobs, problems)
            for cron_problem in problems:
                log.error("Anima %s: %s", self.anima, cron_problem, extra={"anima": self.anima})
            log.info(
                "Anima %s: crons/%s: %d cron(s) loaded, %d problem(s)",
                self.anima,
                path.name,
                len(jobs),
                len(problems),
                extra={"anima": self.anima},
            )
        if changed:
            ordered = [self._files[path] for path in sorted(self._files)]
            self.jobs = [job for _, jobs, _ in ordered for job in jobs]
            self.problems = [p for _, _, problems in ordered for p in problems]
        return changed
