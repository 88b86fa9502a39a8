"""Role templates from config/roles/*.md: a persona prompt plus the defaults a new Anima gets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hub.markdown_files import read_document


def bundled_config_dir() -> Path:
    """config/ beside the package in a checkout, or the copy bundled into the wheel."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "config", here / "_bundled" / "config"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("config/ not found beside the hub package")


@dataclass(frozen=True, slots=True)
class Role:
    name: str
    title: str
    summary: str
    persona: str  # with a {name} placeholder
    heartbeat_minutes: int
    max_concurrent_turns: int


def load_roles(config_dir: Path | None = None) -> dict[str, Role]:
    folder = (config_dir or bundled_config_dir()) / "roles"
    roles = {}
    for path in sorted(folder.glob("*.md")):
        meta, body = read_document(path)
        role = Role(
            name=str(meta.get("role", path.stem)),
            title=str(meta.get("title", path.stem.title())),
            summary=str(meta.get("summary", "")),
            persona=body.strip(),
            heartbeat_minutes=int(meta.get("heartbeat_minutes", 30)),
            max_concurrent_turns=int(meta.get("max_concurrent_turns", 4)),
        )
        roles[role.name] = role
    return roles
