"""Tests for hub.roles and hub.animas: role templates, creating Animas on disk, loading them."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from hub.animas import MEMORY_DIRS, AnimaError, AnimaRegistry
from hub.roles import Role, load_roles

ROLES = ("researcher", "engineer", "manager", "writer", "ops")


@pytest.fixture(scope="module")
def roles() -> dict[str, Role]:
    return load_roles()


@pytest.fixture
def root(home: Path) -> Path:
    return home / "animas"


@pytest.fixture
def registry(root: Path, roles: dict[str, Role]) -> AnimaRegistry:
    return AnimaRegistry(root, roles)


def folders(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


# --- roles ---------------------------------------------------------------------------------


def test_load_roles_returns_the_five_roles(roles: dict[str, Role]) -> None:
    assert sorted(roles) == sorted(ROLES)


@pytest.mark.parametrize("name", ROLES)
def test_role_has_persona_and_summary(roles: dict[str, Role], name: str) -> None:
    role = roles[name]

    assert role.name == name
    assert role.title
    assert role.summary.strip()
    assert "{name}" in role.persona
    assert role.persona.format(name="Zed").startswith("You are Zed")
    assert not role.persona.startswith("---")  # the front matter is not part of the persona
    assert role.heartbeat_minutes >= 1
    assert role.max_concurrent_turns >= 1


# --- create --------------------------------------------------------------------------------


def test_create_writes_files_and_memory_folders(registry: AnimaRegistry, root: Path) -> None:
    anima = registry.create("kai", "engineer")

    folder = root / "kai"
    assert anima.path == folder
    assert (folder / "anima.toml").is_file()
    assert (folder / "identity.md").is_file()
    for sub in ("episodes", "knowledge", "procedures", "skills", "crons", "archive/forgotten"):
        assert (folder / sub).is_dir(), sub
    assert set(MEMORY_DIRS) == {
        "episodes",
        "knowledge",
        "procedures",
        "skills",
        "crons",
        "archive/forgotten",
    }
    assert not list(folder.glob(".*.tmp"))  # atomic writes leave no temp files behind


def test_anima_toml_parses_back(
    registry: AnimaRegistry, root: Path, roles: dict[str, Role]
) -> None:
    registry.create("mika", "manager")
    registry.create("kai", "engineer", supervisor="mika")

    kai = tomllib.loads((root / "kai" / "anima.toml").read_text(encoding="utf-8"))
    mika = tomllib.loads((root / "mika" / "anima.toml").read_text(encoding="utf-8"))

    assert kai["name"] == "kai"
    assert kai["role"] == "engineer"
    assert kai["supervisor"] == "mika"
    assert kai["heartbeat"]["interval_minutes"] == roles["engineer"].heartbeat_minutes
    assert kai["limits"]["max_concurrent_turns"] == roles["engineer"].max_concurrent_turns
    assert mika["role"] == "manager"
    assert "supervisor" not in mika


def test_ops_heartbeat_comes_from_its_role(registry: AnimaRegistry, roles: dict[str, Role]) -> None:
    anima = registry.create("olly", "ops")

    assert anima.spec.heartbeat.interval_minutes == roles["ops"].heartbeat_minutes == 15


def test_identity_has_capitalized_name_and_persona(
    registry: AnimaRegistry, root: Path, roles: dict[str, Role]
) -> None:
    anima = registry.create("aria", "researcher")

    identity = (root / "aria" / "identity.md").read_text(encoding="utf-8")
    assert identity.startswith("# Aria\n")
    assert roles["researcher"].persona.format(name="Aria") in identity
    assert roles["researcher"].summary in identity
    assert "{name}" not in identity
    assert anima.identity == identity


def test_create_registers_the_anima(registry: AnimaRegistry) -> None:
    registry.create("mika", "manager")
    kai = registry.create("kai", "engineer", supervisor="mika")

    assert registry.names() == ["kai", "mika"]
    assert "kai" in registry
    assert registry.get("kai") == kai
    assert kai.name == "kai"
    assert kai.spec.supervisor == "mika"
    assert kai.spec.role == "engineer"


def test_longest_valid_name_is_accepted(registry: AnimaRegistry) -> None:
    name = "a" + "b" * 31  # 32 characters

    assert registry.create(name, "writer").name == name


@pytest.mark.parametrize(
    "name",
    ["", "Aria", "1abc", "a/b", "../x", "a" * 33, "-kai", "kai.bot", "kai bot"],
    ids=[
        "empty",
        "uppercase",
        "digit-first",
        "slash",
        "dotdot",
        "33-chars",
        "dash",
        "dot",
        "space",
    ],
)
def test_invalid_name_is_refused(registry: AnimaRegistry, root: Path, name: str) -> None:
    with pytest.raises(AnimaError, match="invalid Anima name"):
        registry.create(name, "engineer")

    assert folders(root) == []
    assert not (root.parent / "x").exists()


def test_name_with_trailing_newline_is_refused_before_writing(
    registry: AnimaRegistry, root: Path
) -> None:
    """`$` in NAME_RE also matches before a final newline: "kai\\n" must still be invalid."""
    with pytest.raises(AnimaError, match="invalid Anima name"):
        registry.create("kai\n", "engineer")

    assert folders(root) == []


def test_unknown_role_is_refused(registry: AnimaRegistry, root: Path) -> None:
    with pytest.raises(AnimaError, match="unknown role 'wizard'"):
        registry.create("kai", "wizard")

    assert folders(root) == []


def test_unknown_supervisor_is_refused(registry: AnimaRegistry, root: Path) -> None:
    with pytest.raises(AnimaError, match="unknown supervisor 'boss'"):
        registry.create("kai", "engineer", supervisor="boss")

    assert folders(root) == []


def test_creating_twice_is_refused(registry: AnimaRegistry, root: Path) -> None:
    registry.create("kai", "engineer")
    before = (root / "kai" / "anima.toml").read_text(encoding="utf-8")

    with pytest.raises(AnimaError, match="already exists"):
        registry.create("kai", "writer")

    assert (root / "kai" / "anima.toml").read_text(encoding="utf-8") == before


def test_creating_twice_is_refused_by_a_fresh_registry(root: Path, roles: dict[str, Role]) -> None:
    AnimaRegistry(root, roles).create("kai", "engineer")

    with pytest.raises(AnimaError, match="already exists"):
        AnimaRegistry(root, roles).create("kai", "engineer")


# --- load ----------------------------------------------------------------------------------


def test_load_reads_created_animas(root: Path, roles: dict[str, Role]) -> None:
    first = AnimaRegistry(root, roles)
    first.create("mika", "manager")
    first.create("kai", "engineer", supervisor="mika")

    second = AnimaRegistry(root, roles)
    problems = second.load()

    assert problems == []
    assert second.names() == ["kai", "mika"]
    kai = second.get("kai")
    assert kai is not None
    assert kai.spec.supervisor == "mika"
    assert kai.identity.startswith("# Kai\n")


def test_load_skips_folders_without_anima_toml(registry: AnimaRegistry, root: Path) -> None:
    registry.create("kai", "engineer")
    (root / "notes").mkdir()

    assert registry.load() == []
    assert registry.names() == ["kai"]


BROKEN = {
    "bad-toml": 'name = "bad-toml"\nrole = \n',
    "unknown-key": 'name = "unknown-key"\nrole = "engineer"\ncolour = "blue"\n',
    "mismatch": 'name = "other"\nrole = "engineer"\n',
    "bad-zone": 'name = "bad-zone"\nrole = "engineer"\ntimezone = "Mars/Olympus"\n',
}


@pytest.mark.parametrize("folder", list(BROKEN))
def test_load_reports_one_line_per_broken_folder(
    registry: AnimaRegistry, root: Path, folder: str
) -> None:
    registry.create("mika", "manager")
    registry.create("kai", "engineer", supervisor="mika")
    (root / folder).mkdir()
    toml_path = root / folder / "anima.toml"
    toml_path.write_text(BROKEN[folder], encoding="utf-8")

    problems = registry.load()

    assert registry.names() == ["kai", "mika"]
    assert folder not in registry
    assert len(problems) == 1
    assert str(toml_path) in problems[0]
    assert "\n" not in problems[0], f"problem spans several lines: {problems[0]!r}"


def test_an_unknown_timezone_is_named_with_its_file(registry: AnimaRegistry, root: Path) -> None:
    """Loaded, it failed every scheduler tick of the running hub instead."""
    registry.create("kai", "engineer")
    toml_path = root / "kai" / "anima.toml"
    toml_path.write_text(
        toml_path.read_text(encoding="utf-8").replace('timezone = ""', 'timezone = "Mars/Olympus"'),
        encoding="utf-8",
    )

    problems = registry.load()

    assert problems == [
        f"{toml_path}: timezone: unknown timezone 'Mars/Olympus': use an IANA name "
        "(e.g. UTC, Europe/Berlin)"
    ]
    assert registry.names() == []


def test_load_forgets_an_anima_whose_folder_broke(registry: AnimaRegistry, root: Path) -> None:
    registry.create("kai", "engineer")
    registry.create("mika", "manager")
    (root / "kai" / "anima.toml").write_text('name = "kai"\nrole = \n', encoding="utf-8")

    problems = registry.load()

    assert len(problems) == 1
    assert registry.names() == ["mika"]
