"""Logging: the console, <home>/logs/hub.log, and one file per Anima for `animahub logs`.

A record that carries `extra={"anima": name}` also lands in <home>/logs/animas/<name>.log.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

from rich.logging import RichHandler

FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


def anima_log_path(home: Path, anima: str) -> Path:
    return home / "logs" / "animas" / f"{anima}.log"


class AnimaFileHandler(logging.Handler):
    """Routes records tagged with an Anima to that Anima's own rotating file."""

    def __init__(self, home: Path) -> None:
        super().__init__()
        self._home = home
        self._files: dict[str, RotatingFileHandler] = {}
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s"))

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


def configure(home: Path, level: str = "INFO", console: bool = True) -> None:
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    (home / "logs").mkdir(parents=True, exist_ok=True)
    hub_file = RotatingFileHandler(home / "logs" / "hub.log", maxBytes=10_000_000, backupCount=3)
    hub_file.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(hub_file)
    root.addHandler(AnimaFileHandler(home))
    if console:
        root.addHandler(RichHandler(show_path=False, rich_tracebacks=True))
    # apscheduler: the hub logs what its jobs do (hub/agenda.py); the store's bookkeeping is noise
    for noisy in ("LiteLLM", "httpx", "uvicorn.access", "alembic", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
