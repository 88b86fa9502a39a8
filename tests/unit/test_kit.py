"""The adapter kit (animahub_kit, docs/adapters.md) ships in the wheel, installs with the `kit`
extra and asks nothing of the runtime install: what it imports is the runtime lock's or the
extra's, and the extra is within the development one, so the project's tests run on it."""

from __future__ import annotations

import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

from tests.unit.test_locks import RUNTIME, imported_modules, normalize, parse_lock

ROOT = Path(__file__).resolve().parents[2]


def pyproject() -> dict[str, dict[str, object]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def extra(name: str) -> list[Requirement]:
    listed = pyproject()["project"]["optional-dependencies"]
    assert isinstance(listed, dict)
    return [Requirement(text) for text in listed[name]]


def test_the_kit_is_in_the_wheel() -> None:
    wheel = pyproject()["tool"]["hatch"]
    assert isinstance(wheel, dict)
    assert "animahub_kit" in wheel["build"]["targets"]["wheel"]["packages"]


def test_the_kit_extra_is_within_the_development_extra() -> None:
    dev = {normalize(r.name): r.specifier for r in extra("dev")}
    for requirement in extra("kit"):
        assert dev.get(normalize(requirement.name)) == requirement.specifier, requirement


def test_the_kit_imports_only_the_runtime_lock_and_its_extra() -> None:
    """`pip install animahub[kit]` is all an adapter's author installs: an import of a
    development tool (hypothesis, playwright) would fail there."""
    allowed = set(parse_lock(RUNTIME)) | {normalize(r.name) for r in extra("kit")}
    owners = packages_distributions()
    ours = {"hub", "adapters", "animahub_kit", "__future__"} | set(sys.stdlib_module_names)
    outside: dict[str, list[str]] = {}
    for path in sorted((ROOT / "animahub_kit").rglob("*.py")):
        for module in imported_modules(path) - ours:
            dists = {normalize(d) for d in owners.get(module, [])}
            if not dists & allowed:
                outside.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not outside, f"the kit imports what neither {RUNTIME} nor its extra installs: {outside}"
