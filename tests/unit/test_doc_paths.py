"""Every `hub/…` and `adapters/…` path README and docs/ name exists (issue 42): a module that
moves or goes takes its mentions with it, or this fails."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# a path: from hub/ or adapters/, to its last word character or slash (so the full stop
# or the backtick after it is not part of it); not inside a longer path or a URL
PATH = re.compile(r"(?<![\w/.-])((?:hub|adapters)/[\w./-]*[\w/])")


def named_paths() -> list[tuple[str, str]]:
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted(ROOT.glob("docs/**/*.md"))]
    return [
        (page.relative_to(ROOT).as_posix(), found)
        for page in pages
        for found in PATH.findall(page.read_text(encoding="utf-8"))
    ]


def test_the_docs_name_paths() -> None:
    # the finder itself: if it found nothing, the test below would pass on anything
    named = {path for _, path in named_paths()}
    assert len(named) > 100, named


def test_every_path_the_docs_name_exists() -> None:
    missing = [(page, path) for page, path in named_paths() if not (ROOT / path).exists()]
    assert missing == []
