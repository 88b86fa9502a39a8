"""Markdown with YAML front matter on disk: the source of truth, written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import frontmatter
from frontmatter.default_handlers import YAMLHandler

_YAML = YAMLHandler()


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
    """Front matter and body of a markdown file; yaml.YAMLError for front matter that is not
    YAML, UnicodeDecodeError for a file that is not UTF-8.

    python-frontmatter's own `loads` is not used: it would take a body that opens with a
    `{...}` or `+++` block for JSON or TOML metadata, and it turns CRLF into LF, so a body
    written with one would read back changed. Only YAML front matter is read (what the
    hub writes), and the text is kept as it was written."""
    return parse_document(path.read_bytes().decode("utf-8"))


def parse_document(text: str) -> tuple[dict[str, Any], str]:
    """What read_document reads from a file, from its text."""
    text = text.strip()
    if not _YAML.detect(text):
        return {}, text
    try:
        front, body = _YAML.split(text)
    except ValueError:  # an opening `---` and no closing one: all of it is body
        return {}, text
    meta = _YAML.load(front)
    return (dict(meta) if isinstance(meta, dict) else {}), body.strip()


def write_document(path: Path, meta: dict[str, Any], body: str) -> None:
    post = frontmatter.Post(body)
    post.metadata.update(meta)  # not Post(body, **meta): keys `handler`, `content`, 1 clash
    atomic_write(path, frontmatter.dumps(post, sort_keys=False) + "\n")
