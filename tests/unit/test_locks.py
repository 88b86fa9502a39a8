"""The three hash-pinned locks agree with pyproject.toml and each other (README, "Dependencies").

- requirements.lock (`make run`): exactly the closure of [project.dependencies] and the build
  group, nothing of the development tools;
- requirements-dev.lock (`make test`): that closure plus the dev extra, every package they share
  at the same version with the same hashes;
- requirements-uv.lock: the installer the Makefile puts into the venv first.
Every entry is pinned and hashed; none admits litellm 1.82.7 or 1.82.8 (a credential-stealing
payload). The hub's own imports come from the runtime lock, and `make run` installs only that
one (read from `make -n`, which runs nothing). Offline: the locks' `# via` lines, written by
`make lock`, say why each package is there.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
RUNTIME, DEV, INSTALLER = "requirements.lock", "requirements-dev.lock", "requirements-uv.lock"
BAD_LITELLM = {Version("1.82.7"), Version("1.82.8")}
# how `make lock` (uv pip compile) names the project as the reason for a package
PROJECT = "animahub (pyproject.toml)"


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Entry:
    version: str
    hashes: set[str] = field(default_factory=set)
    via: set[str] = field(default_factory=set)


def parse_lock(name: str) -> dict[str, Entry]:
    """A uv/pip-tools lock: `name==version \\`, `--hash=sha256:…` lines, then `# via` lines."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+?)(\s*\\)?$", line)
        if pin:
            current = entries.setdefault(normalize(pin.group(1)), Entry(pin.group(3)))
            in_via = False
            continue
        assert current is not None and line.startswith("    "), f"{name}: not pinned: {line!r}"
        text = line.strip()
        if text.startswith("--hash="):
            algorithm, _, digest = text.removeprefix("--hash=").rstrip(" \\").partition(":")
            assert algorithm == "sha256" and re.fullmatch(r"[0-9a-f]{64}", digest), line
            current.hashes.add(digest)
        elif text == "# via":
            in_via = True
        elif text.startswith("# via "):
            current.via.add(text.removeprefix("# via "))
        elif in_via and text.startswith("#   "):
            current.via.add(text.removeprefix("#   "))
        else:
            raise AssertionError(f"{name}: unexpected line {line!r}")
    return entries


def pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def requirements(*path: str) -> list[Requirement]:
    node: object = pyproject()
    for key in path:
        assert isinstance(node, dict), path
        node = node[key]
    assert isinstance(node, list)
    return [Requirement(text) for text in node]


RUNTIME_ROOTS = requirements("project", "dependencies") + requirements("dependency-groups", "build")
DEV_ROOTS = requirements("project", "dependencies") + requirements(
    "project", "optional-dependencies", "dev"
)
INSTALLER_ROOTS = requirements("dependency-groups", "installer")


@pytest.mark.parametrize("name", [RUNTIME, DEV, INSTALLER])
def test_every_entry_is_pinned_and_hashed(name: str) -> None:
    entries = parse_lock(name)
    assert entries, name
    unhashed = sorted(package for package, entry in entries.items() if not entry.hashes)
    assert not unhashed, f"{name}: no --hash for {unhashed}"


@pytest.mark.parametrize("name", [RUNTIME, DEV, INSTALLER])
def test_no_lock_admits_the_compromised_litellm(name: str) -> None:
    entry = parse_lock(name).get("litellm")
    assert entry is None or Version(entry.version) not in BAD_LITELLM
    (litellm,) = [r for r in requirements("project", "dependencies") if r.name == "litellm"]
    assert not any(litellm.specifier.contains(bad, prereleases=True) for bad in BAD_LITELLM)


@pytest.mark.parametrize(
    ("name", "roots"),
    [(RUNTIME, RUNTIME_ROOTS), (DEV, DEV_ROOTS), (INSTALLER, INSTALLER_ROOTS)],
)
def test_each_lock_pins_what_pyproject_asks_within_its_specifiers(
    name: str, roots: list[Requirement]
) -> None:
    entries = parse_lock(name)
    for requirement in roots:
        entry = entries.get(normalize(requirement.name))
        assert entry is not None, f"{name} lacks {requirement} (pyproject.toml): run make lock"
        assert requirement.specifier.contains(entry.version, prereleases=True), (
            f"{name}: {requirement.name}=={entry.version} is outside {requirement}"
        )
    # ...and names as the project's own nothing pyproject.toml does not (a dependency dropped there)
    marked = {p for p, entry in entries.items() if any(is_project(r) for r in entry.via)}
    extra = sorted(marked - {normalize(r.name) for r in roots})
    assert not extra, f"{name} pins {extra} for the project, which pyproject.toml does not ask"


def is_project(reason: str) -> bool:
    """`animahub (pyproject.toml)`, or `animahub (pyproject.toml:GROUP)` for a dependency group."""
    return reason == PROJECT or reason.startswith(PROJECT[:-1] + ":")


def closure(entries: dict[str, Entry]) -> set[str]:
    """The packages reachable from the project through the `# via` lines (constraints aside)."""
    reached: set[str] = set()
    while True:
        more = {
            package
            for package, entry in entries.items()
            if package not in reached
            and any(is_project(r) or normalize(r) in reached for r in entry.via)
        }
        if not more:
            return reached
        reached |= more


@pytest.mark.parametrize("name", [RUNTIME, DEV, INSTALLER])
def test_each_lock_holds_the_closure_of_its_roots_and_nothing_else(name: str) -> None:
    entries = parse_lock(name)
    stray = sorted(set(entries) - closure(entries))
    assert not stray, f"{name}: nothing here needs {stray} (a dev tool in the runtime lock?)"
    for package, entry in entries.items():
        for reason in entry.via - {f"-c {RUNTIME}"}:
            assert is_project(reason) or normalize(reason) in entries, (
                f"{name}: {package} is there for {reason!r}, which this lock does not hold"
            )


def test_the_development_lock_is_the_runtime_lock_plus_the_dev_tools() -> None:
    runtime, dev = parse_lock(RUNTIME), parse_lock(DEV)
    missing = sorted(set(runtime) - set(dev))
    assert not missing, f"{DEV} lacks {missing} of {RUNTIME}: run make lock"
    for package, entry in runtime.items():
        assert (dev[package].version, dev[package].hashes) == (entry.version, entry.hashes), (
            f"{package}: {entry.version} in {RUNTIME}, {dev[package].version} in {DEV}"
        )
    dev_only = set(dev) - set(runtime)
    for tool in ("pytest", "mypy", "ruff", "playwright", "hypothesis", "import-linter"):
        assert tool in dev_only, tool


def imported_modules(path: Path) -> set[str]:
    """Top-level modules a file imports, at any depth, except under a module-level
    `if TYPE_CHECKING:` (annotations only: never imported when the hub runs)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            statement.body = []
        for node in ast.walk(statement):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.partition(".")[0])
    return found


def test_the_hub_and_the_adapters_import_only_what_the_runtime_lock_installs() -> None:
    """`make run` installs the runtime lock alone: a dev-only import would fail there."""
    runtime = parse_lock(RUNTIME)
    owners = packages_distributions()
    ours = {"hub", "adapters", "__future__"} | set(sys.stdlib_module_names)
    outside: dict[str, list[str]] = {}
    for path in sorted([*(ROOT / "hub").rglob("*.py"), *(ROOT / "adapters").rglob("*.py")]):
        for module in imported_modules(path) - ours:
            dists = {normalize(d) for d in owners.get(module, [])}
            if not dists & set(runtime):
                outside.setdefault(module, []).append(str(path.relative_to(ROOT)))
    assert not outside, f"imported but not in {RUNTIME}: {outside}"


def make_dry_run(target: str, tmp_path: Path) -> list[str]:
    make = shutil.which("make")
    assert make, "make is what README's quick start needs"
    venv = tmp_path / "venv"  # absent: -n prints every step of a first install
    done = subprocess.run(
        [make, "-n", "--no-print-directory", f"VENV={venv}", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def installs(lines: list[str]) -> list[str]:
    return [line for line in lines if re.search(r"\bpip install\b", line)]


def test_make_run_installs_the_runtime_lock_only_with_hashes_and_says_so(tmp_path: Path) -> None:
    lines = make_dry_run("run", tmp_path)
    text = "\n".join(lines)
    assert "-r requirements.lock" in text and DEV not in text
    steps = installs(lines)
    assert len(steps) == 3, steps  # uv (by pip), the lock (by uv), the project itself
    assert f"-r {INSTALLER}" in steps[0] and "uv pip install" in steps[1]
    for step in steps[:2]:
        assert "--require-hashes" in step, step
    for step in steps:
        assert not re.search(r"(^|\s)(--quiet|-q+)(\s|$)", step), f"a silent install: {step}"
    # a line saying what happens before each install step
    announced = [line for line in lines if "==> make:" in line]
    assert len(announced) >= len(steps), lines


def test_make_test_installs_the_development_lock_with_hashes(tmp_path: Path) -> None:
    lines = make_dry_run("test", tmp_path)
    steps = installs(lines)
    assert any(f"-r {DEV}" in s and "--require-hashes" in s for s in steps), steps
    assert not any(f"-r {RUNTIME}" in s for s in steps), steps
