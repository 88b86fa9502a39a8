"""Credentials in the settings: an `env:NAME` value is read from the environment or the
secrets file (`<home>/secrets.env`, refused unless only its owner can read it), and hub.toml
may hold no literal credential, so it can be shared or committed without leaking one."""

from __future__ import annotations

import os
import stat
import tomllib
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, get_args

from dotenv import dotenv_values
from pydantic import (
    BaseModel,
    SecretStr,
)
from pydantic_settings import (
    PydanticBaseSettingsSource,
    TomlConfigSettingsSource,
)

from hub.settings.sections import CONFIG_NAME, SECRETS_NAME, default_home

ENV_REF = "env:"  # a value naming a credential: env:NAME


class TomlWithoutSecrets(TomlConfigSettingsSource):
    """hub.toml, refusing literal credentials (a config file can then be shared or committed
    without leaking anything) and naming the file and line of a syntax error."""

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        try:
            return super()._read_file(file_path)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{file_path} is not valid TOML: {exc}") from exc

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        _refuse_literal_secrets(data, secret_paths(self.settings_cls), ())
        return data


def secret_paths(model: type[BaseModel]) -> frozenset[tuple[str, ...]]:
    """Where a model holds credentials: every field whose type mentions SecretStr."""
    found: set[tuple[str, ...]] = set()
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if _mentions_secret(annotation):
            found.add((name,))
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.update((name, *inner) for inner in secret_paths(annotation))
    return frozenset(found)


def configured_secrets(model: BaseModel, prefix: str = "") -> dict[str, str]:
    """Every credential `model` holds, by its key in hub.toml (`telegram.bot_token`): what
    the redactor must recognise whatever its shape, and what status shows by fingerprint."""
    found: dict[str, str] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr) and value.get_secret_value():
            found[prefix + name] = value.get_secret_value()
        elif isinstance(value, BaseModel):
            found.update(configured_secrets(value, f"{prefix}{name}."))
        elif isinstance(value, dict):  # per-Anima tokens: `[slack] anima_tokens = {...}`
            for key, item in value.items():
                if isinstance(item, SecretStr) and item.get_secret_value():
                    found[f"{prefix}{name}.{key}"] = item.get_secret_value()
    return found


def _mentions_secret(annotation: Any) -> bool:
    if annotation is SecretStr:
        return True
    return any(_mentions_secret(arg) for arg in get_args(annotation))


def _refuse_literal_secrets(
    value: Any, secrets: frozenset[tuple[str, ...]], path: tuple[str, ...]
) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_literal_secrets(item, secrets, (*path, str(key)))
        return
    secret = any(path[: len(p)] == p for p in secrets)
    if secret and isinstance(value, str) and value and not value.startswith(ENV_REF):
        key = ".".join(path)
        raise ValueError(
            f'{key} holds a literal secret in {CONFIG_NAME}; write "env:NAME" and put NAME '
            f"in the environment or in {SECRETS_NAME} (chmod 600)"
        )


def config_home(init_settings: PydanticBaseSettingsSource) -> Path:
    given = init_settings().get("home")
    return Path(given).expanduser() if given else default_home()


class SecretLookup:
    """Environment first, then the secrets file, read lazily and only if mode is 0600."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._values: dict[str, str | None] | None = None

    def get(self, name: str) -> str | None:
        if name in os.environ:
            return os.environ[name]
        return self._file().get(name)

    def _file(self) -> dict[str, str | None]:
        if self._values is None:
            self._values = {}
            if self._path.exists():
                mode = stat.S_IMODE(self._path.stat().st_mode)
                if mode & 0o077:
                    raise ValueError(
                        f"secrets file {self._path} has mode {mode:o}; "
                        f"refusing it until `chmod 600 {self._path}`"
                    )
                self._values = dict(dotenv_values(self._path))
        return self._values


def resolve(value: Any, secrets: SecretLookup, path: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {k: resolve(v, secrets, (*path, str(k))) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, secrets, path) for v in value]
    if isinstance(value, str) and value.startswith(ENV_REF):
        name = value[len(ENV_REF) :]
        found = secrets.get(name)
        if found is None:
            key = ".".join(path)
            raise ValueError(f"{key} refers to env:{name}, which is not set")
        return found
    return value
