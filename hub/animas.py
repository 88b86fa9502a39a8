"""Anima definitions on disk: animas/<name>/{anima.toml, identity.md} (DESIGN §5)."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hub.markdown_files import atomic_write
from hub.roles import Role
from hub.settings import HubSection, LLMSection, check_timezone, describe_errors

NAME_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MEMORY_DIRS = ("episodes", "knowledge", "procedures", "skills", "crons", "archive/forgotten")


class AnimaError(Exception):
    """A bad Anima name, role or definition file, described for the person who caused it."""


_HOUR = r"([01]?\d|2[0-3]):[0-5]\d"
_HOURS = rf"^({_HOUR}-{_HOUR})?$"


class HeartbeatConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    interval_minutes: int = Field(default=30, ge=1)
    # "09:00-18:00" in the Anima's timezone (may wrap past midnight); empty = always.
    active_hours: str = Field(default="", pattern=_HOURS)
    channels: list[str] = Field(default_factory=lambda: ["web:local/general"])


class LimitsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_concurrent_turns: int = Field(default=4, ge=1)
    history_token_budget: int | None = Field(default=None, ge=100)


class AnimaFile(BaseModel):
    """The schema of anima.toml."""

    model_config = ConfigDict(extra="forbid")
    name: str
    role: str
    supervisor: str | None = None
    model: str = ""  # empty: the hub's [llm] model, or offline mode
    timezone: str = ""
    heartbeat: HeartbeatConfig = Field(default_factory=HeartbeatConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    # Where this Anima's task reports go besides the conversation that asked (targets as
    # in a cron's post_to: an address, dm:<platform>:<user>, notion:notion/<data source>).
    report_to: list[str] = Field(default_factory=list)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return check_timezone(value) if value else value  # empty: the hub's


@dataclass(frozen=True, slots=True)
class Anima:
    spec: AnimaFile
    identity: str
    path: Path

    @property
    def name(self) -> str:
        return self.spec.name


def effective_model(anima: Anima | None, llm: LLMSection) -> str:
    """The model an Anima thinks with: its anima.toml `model`, else the hub's `[llm] model`;
    empty: none (the offline mode). The one place this is decided."""
    return (anima.spec.model if anima else "") or llm.model


def effective_timezone(anima: Anima | None, hub: HubSection) -> str:
    """The IANA zone of an Anima's day (its schedule, active hours, "today", what its tools
    call now): its anima.toml `timezone`, else `[hub] timezone`. The one place this is decided."""
    return (anima.spec.timezone if anima else "") or hub.timezone


def validate_name(name: str) -> str:
    if not NAME_RE.fullmatch(name):
        raise AnimaError(
            f"invalid Anima name {name!r}: use 1-32 lowercase letters, digits, '-' or '_', "
            "starting with a letter"
        )
    return name


def load_anima(folder: Path) -> Anima:
    toml_path = folder / "anima.toml"
    try:
        spec = AnimaFile.model_validate(tomllib.loads(toml_path.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as exc:
        raise AnimaError(f"{toml_path}: {exc}") from exc
    except ValidationError as exc:
        raise AnimaError(f"{toml_path}: {describe_errors(exc)}") from exc
    if spec.name != folder.name:
        raise AnimaError(f"{toml_path}: name {spec.name!r} differs from folder {folder.name!r}")
    identity_path = folder / "identity.md"
    identity = identity_path.read_text(encoding="utf-8") if identity_path.exists() else ""
    return Anima(spec=spec, identity=identity, path=folder)


class AnimaRegistry:
    """The Animas under <home>/animas, loaded at start and on create."""

    def __init__(self, root: Path, roles: dict[str, Role]) -> None:
        self.root = root
        self.roles = roles
        self._animas: dict[str, Anima] = {}

    def load(self) -> list[str]:
        """Load every Anima folder; return one problem line per folder that failed."""
        problems = []
        self._animas.clear()
        for folder in sorted(self.root.glob("*/")):
            if not (folder / "anima.toml").exists():
                continue
            try:
                anima = load_anima(folder)
            except AnimaError as exc:
                problems.append(str(exc))
                continue
            self._animas[anima.name] = anima
        return problems

    def names(self) -> list[str]:
        return sorted(self._animas)

    def get(self, name: str) -> Anima | None:
        return self._animas.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._animas

    def all(self) -> list[Anima]:
        return [self._animas[n] for n in self.names()]

    def create(self, name: str, role: str, supervisor: str | None = None) -> Anima:
        validate_name(name)
        if role not in self.roles:
            raise AnimaError(f"unknown role {role!r}; choose one of {', '.join(self.roles)}")
        if supervisor is not None and supervisor not in self._animas:
            raise AnimaError(f"unknown supervisor {supervisor!r}")
        folder = self.root / name
        if (folder / "anima.toml").exists():
            raise AnimaError(f"Anima {name!r} already exists at {folder}")
        template = self.roles[role]
        for sub in MEMORY_DIRS:
            (folder / sub).mkdir(parents=True, exist_ok=True)
        atomic_write(folder / "anima.toml", render_anima_toml(name, template, supervisor))
        atomic_write(folder / "identity.md", render_identity(name, template))
        anima = load_anima(folder)
        self._animas[name] = anima
        return anima


def render_anima_toml(name: str, role: Role, supervisor: str | None) -> str:
    lines = [
        f'name = "{name}"',
        f'role = "{role.name}"',
        f'supervisor = "{supervisor}"' if supervisor else '# supervisor = ""',
        "# The model for this Anima, any litellm model id; empty uses [llm] model of hub.toml.",
        'model = ""',
        "# IANA timezone for schedules; empty uses [hub] timezone.",
        'timezone = ""',
        "# Where task reports go besides the conversation that asked (as a cron's post_to).",
        'report_to = []  # e.g. ["notion:notion/<data source id>"]',
        "",
        "[heartbeat]",
        f"interval_minutes = {role.heartbeat_minutes}",
        'active_hours = ""  # e.g. "09:00-18:00"',
        'channels = ["web:local/general"]',
        "",
        "[limits]",
        f"max_concurrent_turns = {role.max_concurrent_turns}",
        "",
    ]
    return "\n".join(lines)


def render_identity(name: str, role: Role) -> str:
    display = name.capitalize()
    persona = role.persona.format(name=display)
    return f"# {display}\n\nRole: {role.title}: {role.summary}.\n\n{persona}\n"
