"""Typed settings, read once at start (DESIGN §7.1).

Sources, strongest first: explicit overrides (CLI flags), environment variables
`ANIMAHUB_<SECTION>__<KEY>`, `<home>/hub.toml`, defaults. A string value `env:NAME` is
replaced by the environment variable NAME, or by NAME from the secrets file
(`<home>/secrets.env`, dotenv format), which is refused unless only its owner can read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, create_model, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from hub.plugins import load_plugins
from hub.redaction.redact import remember_secrets
from hub.settings.credentials import (
    SecretLookup,
    TomlWithoutSecrets,
    config_home,
    configured_secrets,
    resolve,
    secret_paths,
)
from hub.settings.sections import (
    CONFIG_NAME,
    DEFAULT_PORT,
    SECRETS_NAME,
    ConfigError,
    DmPolicy,
    HubSection,
    LLMSection,
    MemorySection,
    OutboxSection,
    PeopleSection,
    PlatformSection,
    RuntimeSection,
    S,
    SchedulerSection,
    ServerSection,
    SettingsSection,
    StorageSection,
    TasksSection,
    account_form,
    check_timezone,
    default_home,
    is_loopback,
)

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_PORT",
    "SECRETS_NAME",
    "ConfigError",
    "DmPolicy",
    "HubSection",
    "LLMSection",
    "MemorySection",
    "OutboxSection",
    "PeopleSection",
    "PlatformSection",
    "RuntimeSection",
    "SchedulerSection",
    "ServerSection",
    "Settings",
    "SettingsSection",
    "StorageSection",
    "TasksSection",
    "account_form",
    "check_timezone",
    "configured_secrets",
    "default_home",
    "describe_errors",
    "installed_sections",
    "is_loopback",
    "load_settings",
    "secret_paths",
    "settings_class",
]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="ANIMAHUB_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    home: Path = Field(default_factory=default_home)
    hub: HubSection = Field(default_factory=HubSection)
    server: ServerSection = Field(default_factory=ServerSection)
    storage: StorageSection = Field(default_factory=StorageSection)
    llm: LLMSection = Field(default_factory=LLMSection)
    runtime: RuntimeSection = Field(default_factory=RuntimeSection)
    outbox: OutboxSection = Field(default_factory=OutboxSection)
    memory: MemorySection = Field(default_factory=MemorySection)
    scheduler: SchedulerSection = Field(default_factory=SchedulerSection)
    people: PeopleSection = Field(default_factory=PeopleSection)
    tasks: TasksSection = Field(default_factory=TasksSection)

    @model_validator(mode="before")
    @classmethod
    def _resolve_env_refs(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        home = Path(data.get("home") or default_home())
        return resolve(data, SecretLookup(home / SECRETS_NAME), ())

    @model_validator(mode="after")
    def _shared_needs(self) -> Settings:
        """What several workers on one database need (docs/scale.md)."""
        if not self.storage.shared:
            return self
        if not self.database_url.startswith("postgresql"):
            raise ValueError("storage.shared needs a PostgreSQL storage.database_url")
        if self.memory.enabled and not self.memory.qdrant_url:
            raise ValueError(
                "storage.shared needs memory.qdrant_url (a Qdrant server all workers use) "
                "or memory.enabled = false: the embedded index is one process's"
            )
        return self

    def platform(self, name: str, model: type[S]) -> S:
        """The validated `[name]` section of an adapter (registered with its model)."""
        value = getattr(self, name, None)
        if not isinstance(value, model):
            raise LookupError(f"no [{name}] section of type {model.__name__} in these settings")
        return value

    @property
    def database_url(self) -> str:
        return self.storage.database_url or f"sqlite:///{self.home / 'hub.db'}"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = config_home(init_settings) / CONFIG_NAME
        return (init_settings, env_settings, TomlWithoutSecrets(settings_cls, toml_path))


def settings_class(sections: Mapping[str, type[SettingsSection]]) -> type[Settings]:
    """`Settings` with one more section per adapter (`[slack]`, `[telegram]`, …), validated
    by the adapter's own model; the core names no platform."""
    return _settings_class(tuple(sorted(sections.items())))


@cache
def _settings_class(sections: tuple[tuple[str, type[SettingsSection]], ...]) -> type[Settings]:
    if not sections:
        return Settings
    fields: dict[str, Any] = {
        name: (model, Field(default_factory=model)) for name, model in sections
    }
    return create_model("Settings", __base__=Settings, **fields)


def installed_sections() -> dict[str, type[SettingsSection]]:
    """The settings models of the adapters registered as entry points (each plugin's
    `settings`; `hub.adapter.discover` checks the rest of the plugin when it builds them)."""
    return {name: _section_model(name, plugin) for name, plugin in load_plugins().items()}


def _section_model(name: str, plugin: object) -> type[SettingsSection]:
    model = getattr(plugin, "settings", None)
    if not (isinstance(model, type) and issubclass(model, SettingsSection)):
        raise TypeError(f"the adapter {name!r} has no settings model (a SettingsSection)")
    return model


def load_settings(
    home: Path | None = None,
    sections: Mapping[str, type[SettingsSection]] | None = None,
    **overrides: Any,
) -> Settings:
    """Load settings, turning any validation failure into one readable ConfigError line.

    `sections`: the adapters' settings models; by default those of the installed adapters.
    """
    if home is not None:
        overrides["home"] = home
    model = settings_class(installed_sections() if sections is None else sections)
    try:
        settings = model(**overrides)
    except ValidationError as exc:
        raise ConfigError(_one_line(describe_errors(exc))) from exc
    except ValueError as exc:  # raised by the TOML parser or the secrets lookup
        raise ConfigError(_one_line(str(exc))) from exc
    # A process that knows the credentials redacts them from all it keeps and prints.
    remember_secrets(configured_secrets(settings).values())
    return settings


def _one_line(message: str) -> str:
    """A key or `env:` name from hub.toml may hold a newline or another control character:
    written escaped, so the error stays one line (and a terminal shows what is there)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def describe_errors(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        key = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{key}: {message}" if key else message)
    return "; ".join(parts)
