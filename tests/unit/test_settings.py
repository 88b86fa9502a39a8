"""Tests for hub.settings: sources and their order, env: secrets, errors, the shipped example."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from adapters.slack import SlackSettings
from adapters.web import WebSettings
from hub.settings import (
    CONFIG_NAME,
    DEFAULT_PORT,
    SECRETS_NAME,
    ConfigError,
    Settings,
    installed_sections,
    load_settings,
    settings_class,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "config" / "hub.example.toml"


def write_toml(home: Path, text: str) -> Path:
    path = home / CONFIG_NAME
    path.write_text(text, encoding="utf-8")
    return path


def write_secrets(home: Path, text: str, mode: int) -> Path:
    path = home / SECRETS_NAME
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def config_error(home: Path, **overrides: Any) -> str:
    """The ConfigError text for these settings (`load_settings`'s keywords, `sections`
    among them), checked to be a single line."""
    with pytest.raises(ConfigError) as caught:
        load_settings(home, **overrides)
    message = str(caught.value)
    assert "\n" not in message, f"ConfigError spans several lines: {message!r}"
    return message


# --- defaults and sources ------------------------------------------------------------------


def test_defaults(home: Path) -> None:
    settings = load_settings(home)

    assert settings.home == home
    assert settings.server.port == DEFAULT_PORT == 18500
    assert settings.server.host == "127.0.0.1"
    assert settings.server.api_token is None
    assert settings.database_url == f"sqlite:///{home / 'hub.db'}"
    assert settings.llm.model == ""
    assert settings.platform("web", WebSettings).channels == ["general"]


def test_storage_database_url_replaces_the_sqlite_default(home: Path) -> None:
    url = "postgresql+psycopg://u:p@db:5432/animahub"
    settings = load_settings(home, storage={"database_url": url})

    assert settings.database_url == url


def test_hub_toml_values_load(home: Path) -> None:
    write_toml(
        home,
        """
[hub]
default_anima = "mika"
admins = ["web:root"]
timezone = "Asia/Tokyo"

[server]
port = 9100

[llm]
model = "openai/gpt-4o"
api_base = "http://llm.local/v1"

[web]
channels = ["general", "random"]
""",
    )
    settings = load_settings(home)

    assert settings.hub.default_anima == "mika"
    assert settings.hub.admins == ["web:root"]
    assert settings.hub.timezone == "Asia/Tokyo"
    assert settings.hub.language == "en"  # unset keys keep their defaults
    assert settings.server.port == 9100
    assert settings.llm.model == "openai/gpt-4o"
    assert settings.llm.api_base == "http://llm.local/v1"
    assert settings.platform("web", WebSettings).channels == ["general", "random"]


def test_home_from_environment_finds_its_hub_toml(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_toml(home, '[llm]\nmodel = "from-home-env"\n')
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))

    settings = load_settings()

    assert settings.home == home
    assert settings.llm.model == "from-home-env"


def test_environment_overrides_toml(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(
        home,
        """
[server]
port = 9100

[llm]
model = "toml-model"
api_base = "http://llm.local/v1"

[web]
channels = ["general"]
""",
    )
    monkeypatch.setenv("ANIMAHUB_LLM__MODEL", "env-model")
    monkeypatch.setenv("ANIMAHUB_SERVER__PORT", "9200")
    monkeypatch.setenv("ANIMAHUB_WEB__CHANNELS", '["a","b"]')

    settings = load_settings(home)

    assert settings.llm.model == "env-model"
    assert settings.server.port == 9200
    assert settings.platform("web", WebSettings).channels == ["a", "b"]
    # The environment replaces single keys; the rest of the TOML section survives.
    assert settings.llm.api_base == "http://llm.local/v1"


def test_explicit_overrides_beat_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, '[llm]\nmodel = "toml-model"\n')
    monkeypatch.setenv("ANIMAHUB_LLM__MODEL", "env-model")
    monkeypatch.setenv("ANIMAHUB_SERVER__PORT", "9200")

    settings = load_settings(home, llm={"model": "cli-model"}, server={"port": 9300})

    assert settings.llm.model == "cli-model"
    assert settings.server.port == 9300


# --- env: references and the secrets file ---------------------------------------------------


def test_env_reference_resolves_from_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_toml(home, '[llm]\napi_key = "env:HUB_TEST_LLM_KEY"\n')
    monkeypatch.setenv("HUB_TEST_LLM_KEY", "sk-from-env")

    settings = load_settings(home)

    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == "sk-from-env"


def test_env_reference_resolves_from_secrets_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_TEST_LLM_KEY", raising=False)
    write_toml(home, '[llm]\napi_key = "env:HUB_TEST_LLM_KEY"\n')
    write_secrets(home, "# secrets\nHUB_TEST_LLM_KEY=sk-from-file\n", 0o600)

    settings = load_settings(home)

    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == "sk-from-file"


def test_environment_wins_over_secrets_file(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, '[llm]\napi_key = "env:HUB_TEST_LLM_KEY"\n')
    write_secrets(home, "HUB_TEST_LLM_KEY=sk-from-file\n", 0o600)
    monkeypatch.setenv("HUB_TEST_LLM_KEY", "sk-from-env")

    settings = load_settings(home)

    assert settings.llm.api_key is not None
    assert settings.llm.api_key.get_secret_value() == "sk-from-env"


def test_env_reference_in_an_explicit_override(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_TEST_API_TOKEN", "t0ken")

    settings = load_settings(home, server={"api_token": "env:HUB_TEST_API_TOKEN"})

    assert settings.server.api_token is not None
    assert settings.server.api_token.get_secret_value() == "t0ken"


def test_world_readable_secrets_file_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_TEST_LLM_KEY", raising=False)
    write_toml(home, '[llm]\napi_key = "env:HUB_TEST_LLM_KEY"\n')
    secrets = write_secrets(home, "HUB_TEST_LLM_KEY=sk-from-file\n", 0o644)

    message = config_error(home)

    assert str(secrets) in message
    assert "chmod 600" in message
    assert "sk-from-file" not in message


def test_missing_env_variable_names_key_and_variable(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_TEST_MISSING_KEY", raising=False)
    write_toml(home, '[llm]\napi_key = "env:HUB_TEST_MISSING_KEY"\n')

    message = config_error(home)

    assert "llm.api_key" in message
    assert "HUB_TEST_MISSING_KEY" in message


def test_missing_env_variable_not_found_in_secrets_file(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_TEST_MISSING_KEY", raising=False)
    write_toml(home, '[server]\napi_token = "env:HUB_TEST_MISSING_KEY"\n')
    write_secrets(home, "SOMETHING_ELSE=1\n", 0o600)

    message = config_error(home)

    assert "server.api_token" in message
    assert "HUB_TEST_MISSING_KEY" in message


# --- bad values ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[server]\nport = "abc"\n', "server.port"),
        ("[server]\nport = 70000\n", "server.port"),
        ('[llm]\ntimeout_s = "soon"\n', "llm.timeout_s"),
        ('[hub]\nadmins = ["alice"]\n', "hub.admins"),
        ("[nonsense]\nx = 1\n", "nonsense"),
    ],
    ids=["port-not-int", "port-range", "timeout-not-float", "admin-without-platform", "section"],
)
def test_bad_toml_value_is_one_line_naming_the_key(home: Path, toml: str, key: str) -> None:
    write_toml(home, toml)

    assert key in config_error(home)


def test_bad_environment_value_names_the_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANIMAHUB_SERVER__PORT", "abc")

    assert "server.port" in config_error(home)


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "utc", "../etc/passwd", "zone.tab"])
def test_an_unknown_timezone_is_refused(
    home: Path, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    """Accepted, it failed every scheduler tick and heartbeat of a hub that had started."""
    monkeypatch.setenv("ANIMAHUB_HUB__TIMEZONE", zone)

    assert config_error(home) == (
        f"hub.timezone: unknown timezone {zone!r}: use an IANA name (e.g. UTC, Europe/Berlin)"
    )


def test_a_known_timezone_loads(home: Path) -> None:
    write_toml(home, '[hub]\ntimezone = "America/Argentina/Buenos_Aires"\n')

    assert load_settings(home).hub.timezone == "America/Argentina/Buenos_Aires"


def test_admin_without_platform_names_the_entry(home: Path) -> None:
    message = config_error(home, hub={"admins": ["web:root", "alice"]})

    assert "hub.admins" in message
    assert "'alice'" in message


@pytest.mark.parametrize(
    ("section", "key"),
    [("server", "prot"), ("llm", "modle")],
)
def test_unknown_key_in_a_section_is_refused(home: Path, section: str, key: str) -> None:
    """A typo in hub.toml must not be silently ignored (the key would keep its default)."""
    write_toml(home, f"[{section}]\n{key} = 1\n")

    assert f"{section}.{key}" in config_error(home)


def test_public_host_needs_api_token(home: Path) -> None:
    write_toml(home, '[server]\nhost = "0.0.0.0"\n')

    message = config_error(home)

    assert "server" in message
    assert "api_token" in message


def test_public_host_with_api_token_works(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(home, '[server]\nhost = "0.0.0.0"\n')
    monkeypatch.setenv("ANIMAHUB_SERVER__API_TOKEN", "s3cret")

    settings = load_settings(home)

    assert settings.server.host == "0.0.0.0"
    assert settings.server.api_token is not None
    assert settings.server.api_token.get_secret_value() == "s3cret"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_hosts_need_no_token(home: Path, host: str) -> None:
    assert load_settings(home, server={"host": host}).server.host == host


# --- the shipped example -------------------------------------------------------------------


def load_example() -> dict[str, Any]:
    with EXAMPLE.open("rb") as handle:
        return tomllib.load(handle)


def full_settings() -> type[Settings]:
    """Settings with the installed adapters' sections, as `load_settings` builds them."""
    return settings_class(installed_sections())


def test_the_core_settings_name_no_platform() -> None:
    platforms = set(installed_sections())
    assert {"web", "slack", "discord"} <= platforms
    assert platforms.isdisjoint(Settings.model_fields)
    assert platforms <= set(full_settings().model_fields)


def test_example_has_every_section() -> None:
    sections = set(full_settings().model_fields) - {"home"}

    assert set(load_example()) == sections


def test_example_keys_exist_in_the_model(home: Path) -> None:
    defaults = full_settings()(home=home)
    unknown = [
        f"{section}.{key}"
        for section, values in load_example().items()
        for key in values
        if key not in type(getattr(defaults, section)).model_fields
    ]

    assert unknown == []


def test_example_matches_the_model_defaults(home: Path) -> None:
    from_example = full_settings()(home=home, **load_example())
    defaults = full_settings()(home=home)

    drift = [
        f"{section}.{key}: example {getattr(getattr(from_example, section), key)!r}, "
        f"code {getattr(getattr(defaults, section), key)!r}"
        for section, values in load_example().items()
        for key in values
        if getattr(getattr(from_example, section), key) != getattr(getattr(defaults, section), key)
    ]

    assert drift == []
    assert from_example.model_dump() == defaults.model_dump()


def test_example_copied_as_hub_toml_loads(home: Path) -> None:
    (home / CONFIG_NAME).write_bytes(EXAMPLE.read_bytes())

    settings = load_settings(home)

    assert settings.model_dump() == full_settings()(home=home, **load_example()).model_dump()
    assert settings.database_url == f"sqlite:///{home / 'hub.db'}"


# --- platforms ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[slack]\nbot_token = "xoxb-123-456"\n', "slack.bot_token"),
        ('[discord]\nbot_token = "MTIz.abc"\n', "discord.bot_token"),
        ('[llm]\napi_key = "sk-live-1"\n', "llm.api_key"),
        ('[slack]\nanima_tokens = { aria = "xoxb-9" }\n', "slack.anima_tokens.aria"),
    ],
)
def test_a_literal_secret_in_hub_toml_is_refused(home: Path, toml: str, key: str) -> None:
    write_toml(home, toml)
    message = config_error(home)
    assert key in message and "env:NAME" in message
    assert "xoxb" not in message and "sk-live" not in message and "MTIz" not in message


def test_platform_tokens_come_from_env_references(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-from-env")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s3cret")
    write_toml(
        home,
        '[slack]\nenabled = true\nbot_token = "env:SLACK_BOT_TOKEN"\n'
        'signing_secret = "env:SLACK_SIGNING_SECRET"\n',
    )
    slack = load_settings(home).platform("slack", SlackSettings)
    assert slack.bot_token is not None
    assert slack.bot_token.get_secret_value() == "xoxb-from-env"


def test_platforms_switch_on_from_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANIMAHUB_SLACK__ENABLED", "true")
    monkeypatch.setenv("ANIMAHUB_SLACK__BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("ANIMAHUB_SLACK__APP_TOKEN", "xapp-1")
    monkeypatch.setenv("ANIMAHUB_SLACK__API_URL", "http://127.0.0.1:9/api/")
    slack = load_settings(home).platform("slack", SlackSettings)
    assert slack.enabled and slack.api_url == "http://127.0.0.1:9/api/"


@pytest.mark.parametrize(
    ("section", "values", "needs"),
    [
        ("slack", {"enabled": True}, "bot_token"),
        ("slack", {"enabled": True, "bot_token": "x"}, "app_token (Socket Mode) or signing_secret"),
        ("discord", {"enabled": True}, "bot_token"),
    ],
)
def test_an_enabled_platform_without_its_tokens_says_what_is_missing(
    home: Path, section: str, values: dict[str, object], needs: str
) -> None:
    message = config_error(home, **{section: values})
    assert message.startswith(f"{section}: ") and needs in message


def test_a_toml_syntax_error_names_the_file_and_the_line(home: Path) -> None:
    path = write_toml(home, '[llm]\nmodel = "x"\n\n[server\nport = 9\n')
    message = config_error(home)
    assert str(path) in message and "line 4" in message


def test_an_unknown_section_is_named(home: Path) -> None:
    write_toml(home, "[slak]\nenabled = true\n")
    assert config_error(home).startswith("slak: Extra inputs are not permitted")


def test_an_adapter_brings_its_own_secret_keys(home: Path) -> None:
    from pydantic import Field, SecretStr

    from hub.adapter import SettingsSection

    class ChatSettings(SettingsSection):
        enabled: bool = False
        token: SecretStr | None = None
        tokens: dict[str, SecretStr] = Field(default_factory=dict)

    write_toml(home, '[chat]\ntoken = "literal-123"\n')
    message = config_error(home, sections={"chat": ChatSettings})
    assert "chat.token" in message and "literal-123" not in message
    write_toml(home, '[chat]\ntokens = { a = "literal-456" }\n')
    assert "chat.tokens.a" in config_error(home, sections={"chat": ChatSettings})
    write_toml(home, "[chat]\nenabled = true\n")
    settings = load_settings(home, sections={"chat": ChatSettings})
    assert settings.platform("chat", ChatSettings).enabled
