"""The map of docs/architecture.md is the code's (issue 42): every module at hub/'s top is a
room of the layers contract or one of the shared contracts, the page's drawing is the one
scripts/rooms.py draws from the imports, and every arrow in it points down."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def rooms_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rooms", ROOT / "scripts" / "rooms.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_module_at_the_top_of_hub_has_a_place_in_the_layers() -> None:
    placed = {name for layer in rooms_script().layers() for name in layer}
    top = {p.stem for p in (ROOT / "hub").glob("*.py")} - {"__init__"}
    top |= {p.name for p in (ROOT / "hub").iterdir() if (p / "__init__.py").exists()}
    assert sorted(top - placed) == []
    assert sorted(placed - top) == []  # and the contract names nothing that is gone


def test_the_drawing_in_the_page_is_the_one_the_imports_give() -> None:
    rooms = rooms_script()
    text = rooms.PAGE.read_text(encoding="utf-8")
    assert rooms.drawing() in text, "run: .venv/bin/python scripts/rooms.py --write"


def test_every_import_between_rooms_points_down() -> None:
    rooms = rooms_script()
    floor = {room: n for n, layer in enumerate(rooms.layers()) for room in layer}
    floor[rooms.CONTRACTS] = len(rooms.layers()) - 1
    found = rooms.edges()
    assert found  # the imports were read
    assert [(a, b) for a, b in sorted(found) if floor[a] >= floor[b]] == []
