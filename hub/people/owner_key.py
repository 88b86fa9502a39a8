"""The owner's credential file: `<data folder>/owner.key`, readable by its OS user only.

The hub's own command line (`animahub` commands, `animahub chat`, `animahub mcp` over
stdio) proves it is the owner by sending this file's secret as a bearer token; the hub
accepts it as the owner (hub/api/auth.py). Nothing is trusted for being on the same machine
or the loopback address: a reverse proxy on that machine would make anyone the owner. Who
can read the data folder is the owner anyway (the database, the memory files). The secret
is made at `animahub init` or the hub's first start; deleting the file and restarting the
hub makes a new one (the old one is then refused).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

OWNER_KEY_NAME = "owner.key"
OWNER_KEY_PREFIX = "aho_"  # recognisable in a leaked paste, as a person's token's ahp_


class OwnerKeyError(Exception):
    """The file exists but others may read it, or it holds no key: the hub refuses it."""


def owner_key_path(home: Path) -> Path:
    return home / OWNER_KEY_NAME


def ensure_owner_key(home: Path) -> str:
    """The owner's secret, made now (mode 0600 from the first byte) if there is none."""
    path = owner_key_path(home)
    home.mkdir(parents=True, exist_ok=True)
    secret = OWNER_KEY_PREFIX + secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return read_owner_key(home) or _empty(path)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(secret + "\n")
    return secret


def read_owner_key(home: Path) -> str | None:
    """The owner's secret, or None when the file does not exist; raises OwnerKeyError when
    anyone but its OS user may read it (as `<home>/secrets.env`, docs/operations.md)."""
    path = owner_key_path(home)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return None
    if mode & 0o077:
        raise OwnerKeyError(
            f"{path} has mode {mode:o}: others may read the owner's credential; "
            f"refusing it until `chmod 600 {path}`"
        )
    secret = path.read_text(encoding="ascii", errors="replace").strip()
    return secret or _empty(path)


def _empty(path: Path) -> str:
    raise OwnerKeyError(f"{path} holds no key: delete it and start the hub to make a new one")
