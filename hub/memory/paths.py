"""Safe paths into an Anima's memory folder, for the API and the CLI."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

MAX_NAME_BYTES = 200


class MemoryPathError(ValueError):
    """A path that would leave the Anima's memory folder, or is not a memory file."""


def memory_path(folder: Path, relative: str) -> Path:
    """`relative` inside `folder`, refusing absolute paths, `..`, symlinks and non-markdown."""
    pure = PurePosixPath(relative)
    if not relative or pure.is_absolute() or relative.startswith("~") or "\\" in relative:
        raise MemoryPathError(f"{relative!r}: give a path relative to the Anima's folder")
    if "\0" in relative:  # the OS would refuse it with a bare ValueError
        raise MemoryPathError(f"{relative!r}: a path cannot contain a NUL character")
    if any(part in ("..", ".") for part in pure.parts):
        raise MemoryPathError(f"{relative!r}: '..' and '.' are not allowed")
    if pure.suffix != ".md":
        raise MemoryPathError(f"{relative!r}: memory files are markdown (.md)")
    if any(len(part.encode()) > MAX_NAME_BYTES for part in pure.parts):
        # Linux takes 255 bytes a name; atomic_write's temp file adds a few to it.
        raise MemoryPathError(f"{relative!r}: a name is at most {MAX_NAME_BYTES} bytes")
    candidate = folder.joinpath(*pure.parts)
    try:
        _refuse_links(folder, pure.parts, relative)
        inside = candidate.resolve().is_relative_to(folder.resolve())
    except OSError as exc:  # a name too long for the file system, a loop
        raise MemoryPathError(f"{relative!r}: {exc.strerror or exc}") from exc
    if not inside:
        raise MemoryPathError(f"{relative!r}: outside the Anima's memory folder")
    return candidate


def _refuse_links(folder: Path, parts: tuple[str, ...], relative: str) -> None:
    current = folder
    for part in parts:  # no component may be a link, even one pointing inside
        current = current / part
        if current.is_symlink():
            raise MemoryPathError(f"{relative!r}: symbolic links are not followed")
