"""One hub per data root: an exclusive lock, and a run file saying where the hub listens.

Commands that change state ask `running_hub()`: with a live hub they go through its API,
otherwise they take the lock themselves and act in-process, so two processes never write
the same database or index.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

LOCK_NAME = "hub.lock"
RUN_NAME = "hub.json"


class HubBusy(Exception):
    """Another process holds the data root."""


@dataclass(frozen=True, slots=True)
class RunningHub:
    pid: int
    url: str


@contextmanager
def hold_data_root(home: Path, url: str | None = None) -> Iterator[None]:
    """Hold the data root's lock; with a URL, also advertise the hub in the run file."""
    home.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = open(home / LOCK_NAME, "a+")  # noqa: SIM115 - held for the whole block
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise HubBusy(f"another AnimaHub process is using {home}") from exc
        run_file = home / RUN_NAME
        if url is not None:
            run_file.write_text(json.dumps({"pid": os.getpid(), "url": url}))
        try:
            yield
        finally:
            if url is not None:
                run_file.unlink(missing_ok=True)
    finally:
        handle.close()


def running_hub(home: Path) -> RunningHub | None:
    """The hub serving this data root, if one holds the lock and has said where it listens."""
    lock = home / LOCK_NAME
    if not lock.exists():
        return None
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: someone is running
        else:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return None
    try:
        data = json.loads((home / RUN_NAME).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        raise HubBusy(f"another AnimaHub process is using {home}") from None
    return RunningHub(pid=int(data["pid"]), url=str(data["url"]))
