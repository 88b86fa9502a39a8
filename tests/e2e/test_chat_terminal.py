"""`animahub chat` in a terminal renders the reply's Markdown; piped, it prints the text the
hub sent, so a script reads it unchanged."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.e2e.hubproc import BIN, cli, env_for

MARKED = "`[llm]`"  # code in every offline reply, first or not


def in_terminal(home: Path, *args: str) -> str:
    """What `animahub ARGS` shows on a pseudo-terminal, escape sequences and all."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN / "animahub"), *args],
        env=env_for(home, TERM="xterm", COLUMNS="200"),
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    assert proc.wait(timeout=120) == 0, shown.decode(errors="replace")
    os.close(leader)
    return shown.decode(errors="replace")


def test_a_reply_is_rendered_in_a_terminal_and_plain_when_piped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo", "--owner", "Sam").returncode == 0
    shown = in_terminal(home, "chat", "aria", "hello", "--conversation", "tty")
    assert "[llm]" in shown and MARKED not in shown and "**" not in shown
    piped = cli(home, "chat", "aria", "hello", "--conversation", "piped")
    assert piped.returncode == 0 and MARKED in piped.stdout, piped.stdout + piped.stderr
