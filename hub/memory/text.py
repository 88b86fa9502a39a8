"""Small text rules the distillers share (hub/memory/distill.py, hub/memory/handoff.py)."""

from __future__ import annotations

import re

# "_(answered in offline mode)_": a note in place of a reply, not something said.
_PLACEHOLDER = re.compile(r"^_\([^)]*\)_$")


def clip(text: str, limit: int) -> str:
    """The text on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def is_placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER.match(text.strip()))
