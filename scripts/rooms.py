"""The structure drawing of docs/architecture.md: hub/'s rooms and which uses which.

    .venv/bin/python scripts/rooms.py          # print the drawing (a Mermaid flowchart)
    .venv/bin/python scripts/rooms.py --write  # put it into docs/architecture.md

The rooms are the layers of pyproject's import-linter contract, top first; the modules at
hub/'s top (the contracts every room shares) are one box. An arrow is "imports from", so
every arrow points down the page: `lint-imports` fails on one that would point up, and
tests/unit/test_rooms_map.py fails when the page's drawing is not this one.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- rooms: drawn by scripts/rooms.py, checked by tests/unit/test_rooms_map.py -->"
END = "<!-- /rooms -->"
CONTRACTS = "contracts"


def layers() -> list[list[str]]:
    """The rooms of the layers contract, top first; each layer's rooms side by side."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [re.split(r"\s*[|:]\s*", layer.strip()) for layer in contract["layers"]]


def room_of(module: str, rooms: set[str]) -> str | None:
    """`hub.turns.runtime` -> `turns`; `hub.app` (a layer of its own) -> `app`; a module of
    the shared contracts -> `contracts`."""
    parts = module.split(".")
    if parts[0] != "hub" or len(parts) == 1:
        return None
    return parts[1] if parts[1] in rooms else CONTRACTS


def edges() -> set[tuple[str, str]]:
    """Every (room, room it imports from), from the code."""
    ranked = layers()
    rooms = {room for layer in ranked[:-1] for room in layer}  # the last: the contracts
    graph = grimp.build_graph("hub")
    found: set[tuple[str, str]] = set()
    for module in graph.modules:
        here = room_of(module, rooms)
        for imported in graph.find_modules_directly_imported_by(module):
            there = room_of(imported, rooms)
            if here and there and here != there:
                found.add((here, there))
    return found


def reduced(found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Without the arrows another path already implies (a -> b when a -> c -> b): the
    drawing shows the floors; `edges()` holds every import."""

    def reaches(start: str, goal: str, skip: tuple[str, str]) -> bool:
        todo, seen = [start], {start}
        while todo:
            here = todo.pop()
            for a, b in found:
                if a == here and (a, b) != skip and b not in seen:
                    if b == goal:
                        return True
                    seen.add(b)
                    todo.append(b)
        return False

    return {edge for edge in found if not reaches(*edge, skip=edge)}


def drawing() -> str:
    ranked = [*layers()[:-1], [CONTRACTS]]
    lines = ["```mermaid", "flowchart TD"]
    for layer in ranked:
        lines.extend(f"    {room}[{room}]" for room in layer)
    lines.extend(f"    {a} --> {b}" for a, b in sorted(reduced(edges())))
    lines.append("```")
    return "\n".join([BEGIN, *lines, END])


def page_with(drawn: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + drawn + text[end:]


def main() -> None:
    drawn = drawing()
    if sys.argv[1:] == ["--write"]:
        PAGE.write_text(page_with(drawn), encoding="utf-8")
    else:
        print(drawn)


if __name__ == "__main__":
    main()
