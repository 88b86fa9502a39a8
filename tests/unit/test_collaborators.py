"""The composition root wires small typed collaborators (issue 42): `Hub.__init__` fits on a
screen, and the runtime and the task runner take a bundle of parts and named roles, by
keyword, rather than a dozen positional parameters and bare callables."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from pathlib import Path

import pytest

from hub.app import Hub
from hub.tasks.runner import TaskRunner
from hub.turns.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]
SCREEN = 50  # lines: a function one reads without scrolling


def function_lines(path: Path, owner: str, name: str) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == name:
                    assert item.end_lineno is not None
                    return item.end_lineno - item.lineno + 1
    raise AssertionError(f"{owner}.{name} not found in {path}")


def test_the_hubs_init_fits_on_a_screen() -> None:
    assert function_lines(ROOT / "hub" / "app.py", "Hub", "__init__") <= SCREEN


def test_every_wiring_step_of_the_hub_fits_on_a_screen() -> None:
    steps = [name for name in vars(Hub) if name.startswith("_build_")]
    assert steps, "the hub is wired in _build_* steps"
    for name in steps:
        assert function_lines(ROOT / "hub" / "app.py", "Hub", name) <= SCREEN, name


@pytest.mark.parametrize("part", [Runtime, TaskRunner])
def test_a_part_takes_few_positional_parameters_and_the_rest_by_keyword(part: type) -> None:
    parameters = list(inspect.signature(part).parameters.values())
    positional = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert len(positional) <= 2, [p.name for p in positional]
    assert len(parameters) <= 8, [p.name for p in parameters]


@pytest.mark.parametrize("part", [Runtime, TaskRunner])
def test_a_role_a_part_is_handed_is_named_not_a_bare_callable(part: type) -> None:
    hints = inspect.get_annotations(part.__init__, eval_str=True)  # type: ignore[misc]
    # `now` is the clock (a function of no arguments), as everywhere in the hub.
    bare = [name for name, hint in hints.items() if name != "now" and _is_callable(hint)]
    assert bare == []


def _is_callable(hint: object) -> bool:
    origin = getattr(hint, "__origin__", None)
    if origin is Callable or hint is Callable:
        return True
    return any(_is_callable(arg) for arg in getattr(hint, "__args__", ()))
