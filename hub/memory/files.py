"""Safe paths into an Anima's memory folder, for the API and the CLI."""

from __future__ import annotations

from pathlib import Path, PurePosixPath


class MemoryPathError(ValueError):
    """A path that would leave the Anima's memory folder, or is not a memory file."""


def memory_path(folder: Path, relative: str) -> Path:
    """`relative` inside `folder`, refusing absolute paths, `..`, symlinks and non-markdown."""
    pure = PurePosixPath(relative)
    if not relative or pure.is_absolute() or relative.startswith("~") or "\\" in relative:
        raise MemoryPathError(f"{relative!r}: give a path relative to the Anima's folder")
    if any(part in ("..", ".") for part in pure.parts):
        raise MemoryPathError(f"{relative!r}: '..' and '.' are not allowed")
    if pure.suffix != ".md":
        raise MemoryPathError(f"{relative!r}: memory files are markdown (.md)")
    candidate = folder.joinpath(*pure.parts)
    current = folder
    for part in pure.parts:  # no component may be a link, even one pointing inside
        current = current / part
        if current.is_symlink():
            raise MemoryPathError(f"{relative!r}: symbolic links are not followed")
    root = folder.resolve()
    if not candidate.resolve().is_relative_to(root):
        raise MemoryPathError(f"{relative!r}: outside the Anima's memory folder")
    return candidate
