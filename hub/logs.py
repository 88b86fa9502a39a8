"""Logging: the console, <home>/logs/hub.log, and one file per Anima for `animahub logs`.

A record that carries `extra={"anima": name}` also lands in <home>/logs/animas/<name>.log.
Every line is written redacted (hub/redaction/redact.py), tracebacks included: an error about
a message, or a database error quoting its parameters, must not put a pasted key on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from logging.handlers import RotatingFileHandler
from pathlib import Path

from rich.logging import RichHandler

from hub.redaction.redact import redact

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats as usual, then redacts the whole text (message, traceback, stack)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))[0]


class RedactingFilter(logging.Filter):
    """For handlers that format by themselves (the console, which a service manager keeps
    in its journal): redacts the message, and a traceback whose text held a secret is
    folded into the message, redacted, instead of rendered from the exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            trace = logging.Formatter().formatException(record.exc_info)
            clean_trace, found = redact(trace)
            if found:
                message, record.exc_info, record.exc_text = f"{message}\n{clean_trace}", None, None
        clean, kinds = redact(message)
        if kinds or message is not record.msg:
            record.msg, record.args = clean, None
        return True


def one_line(text: str, whole: bool = False) -> str:
    """Text that may span lines, for one log line (`animahub logs` reads a line as an event):
    its first line and how many follow, or with `whole` all of it, line breaks as `\\n`
    (when the log is the only place that keeps it)."""
    lines = text.strip().splitlines() or [""]
    if whole:
        return "“" + "\\n".join(lines) + "”"
    more = f" (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return f"“{lines[0]}”{more}"


def anima_log_path(home: Path, anima: str) -> Path:
    return home / "logs" / "animas" / f"{anima}.log"


class AnimaFileHandler(logging.Handler):
    """Routes records tagged with an Anima to that Anima's own rotating file."""

    def __init__(self, home: Path) -> None:
        super().__init__()
        self._home = home
        self._files: dict[str, RotatingFileHandler] = {}
        self.setFormatter(RedactingFormatter("%(asctime)s %(levelname)-7s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        anima = getattr(record, "anima", None)
        if not isinstance(anima, str):
            return
        handler = self._files.get(anima)
        if handler is None:
            path = anima_log_path(self._home, anima)
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = RotatingFileHandler(path, maxBytes=5_000_000, backupCount=3)
            handler.setFormatter(self.formatter)
            self._files[anima] = handler
        handler.emit(record)

    def close(self) -> None:
        for handler in self._files.values():
            handler.close()
        super().close()


@contextmanager
def to_files(home: Path) -> Iterator[None]:
    """While a CLI command runs a hub in its own process: its records (turns, heartbeats)
    also land in <home>/logs, so `animahub logs` shows them as it shows `start`'s. The
    handlers are added beside any already there, and removed after. Only errors reach the
    console: a warning is about what the command refuses or retries (a delegation over its
    limit, a platform down), which the command says itself; on stderr too it printed twice."""
    root = logging.getLogger()
    added: list[logging.Handler] = [_hub_file(home), AnimaFileHandler(home)]
    if not root.handlers:  # no console of its own: errors on stderr, the rest in the files
        errors = logging.StreamHandler()
        errors.setLevel(logging.ERROR)
        errors.addFilter(RedactingFilter())
        added.append(errors)
    level = root.level
    root.setLevel(min(level, logging.INFO) if level else logging.NOTSET)
    for handler in added:
        root.addHandler(handler)
    _quiet_noisy()
    try:
        yield
    finally:
        for handler in added:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)


def _hub_file(home: Path) -> logging.Handler:
    (home / "logs").mkdir(parents=True, exist_ok=True)
    hub_file = RotatingFileHandler(home / "logs" / "hub.log", maxBytes=10_000_000, backupCount=3)
    hub_file.setFormatter(RedactingFormatter(FORMAT))
    return hub_file


class _PerSocket(logging.Filter):
    """uvicorn logs every WebSocket it accepts, and the websockets library every opening and
    closing, at INFO: a flood of sockets became a flood of log lines (issue 41, class 8)."""

    QUIET = frozenset({'%s - "WebSocket %s" [accepted]', "connection open", "connection closed"})

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or record.msg not in self.QUIET


def _quiet_noisy() -> None:
    # apscheduler: the hub logs what its jobs do (hub/schedule/agenda.py); the store's bookkeeping
    # is noise
    for noisy in ("LiteLLM", "httpx", "uvicorn.access", "alembic", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    for per_socket in ("uvicorn.error", "websockets.server"):
        logger = logging.getLogger(per_socket)
        if not any(isinstance(f, _PerSocket) for f in logger.filters):
            logger.addFilter(_PerSocket())


def configure(home: Path, level: str = "INFO", console: bool = True) -> None:
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.addHandler(_hub_file(home))
    root.addHandler(AnimaFileHandler(home))
    if console:
        console_handler = RichHandler(show_path=False, rich_tracebacks=True)
        console_handler.addFilter(RedactingFilter())
        root.addHandler(console_handler)
    _quiet_noisy()
