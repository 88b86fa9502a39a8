"""Markdown with YAML front matter on disk: the source of truth, written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import frontmatter


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same folder, fsync, rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_document(path: Path) -> tuple[dict[str, Any], str]:
    """Front matter and body of a markdown file."""
    post = frontmatter.loads(path.read_text(encoding="utf-8"))
    return dict(post.metadata), post.content


def write_document(path: Path, meta: dict[str, Any], body: str) -> None:
    post = frontmatter.Post(body, **meta)
    atomic_write(path, frontmatter.dumps(post, sort_keys=False) + "\n")
