"""One slug rule for note names and wikilinks, so `[[Release Checklist]]` finds
`knowledge/release-checklist.md`."""

from __future__ import annotations

import re
import unicodedata


def slug(text: str) -> str:
    """Lowercase words joined by '-', keeping non-Latin letters (日本語 stays 日本語)."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    return re.sub(r"[^\w]+", "-", folded).strip("-_")
