"""What start-up and the CLI import (issue 47): only the platforms enabled, and no heavy
module a command does not use. Loading the settings imported every adapter and its SDK
(2.3 s of each command), and `animahub --help` the whole hub.

Each check runs in a fresh interpreter and reads its `sys.modules`: what was imported, not
how long it took (tests never time anything; bench/startup.py does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_SDKS = ("slack_sdk", "slack_bolt", "discord", "telegram", "linebot", "notion_client")
# What the hub needs for turns, memory, the database and its HTTP server.
HEAVY = (
    "litellm",
    "fastembed",
    "onnxruntime",
    "onnx",
    "numpy",
    "qdrant_edge",
    "sqlalchemy",
    "sqlmodel",
    "alembic",
    "fastapi",
    "starlette",
    "uvicorn",
    "mcp",
    "httpx",
    "hub.app",
    "hub.store",
    "adapters.web.adapter",
)

LOAD_SETTINGS = """
import json, sys
from hub.adapter import build_enabled
from hub.settings import load_settings
settings = load_settings()
built = sorted(build_enabled(settings))  # as the hub builds them (hub/app.py)
print(json.dumps({"modules": sorted(sys.modules), "built": built}), file=sys.stderr)
"""

CLI = """
import json, sys
from hub.cli.main import main
sys.argv = ["animahub", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
print(json.dumps({"modules": sorted(sys.modules), "code": code}), file=sys.stderr)
"""


def run(code: str, home: Path, *args: str, **env: str) -> dict[str, object]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("ANIMAHUB_")
    }
    environment.update(ANIMAHUB_HOME=str(home), PYTHONPATH=str(ROOT), **env)
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    result: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return result


def imported(modules: object, names: tuple[str, ...]) -> list[str]:
    """Which of `names` (packages, or modules and what they hold) are among `modules`."""
    assert isinstance(modules, list)
    return sorted(
        name for name in names if any(m == name or m.startswith(f"{name}.") for m in modules)
    )


def test_settings_with_only_the_web_chat_import_no_platform_sdk(tmp_path: Path) -> None:
    """The default hub.toml enables the web chat alone: loading it, and building the
    adapters as the hub does, imports no other platform's SDK and no litellm."""
    result = run(LOAD_SETTINGS, tmp_path)
    assert result["built"] == ["web"]
    assert imported(result["modules"], (*PLATFORM_SDKS, "litellm")) == []
    # each adapter's module stays unread until its section is enabled
    others = tuple(f"adapters.{name}.adapter" for name in ("slack", "discord", "line"))
    assert imported(result["modules"], (*others, "adapters.telegram.adapter")) == []


def test_an_enabled_platform_is_imported_and_only_that_one(tmp_path: Path) -> None:
    result = run(
        LOAD_SETTINGS,
        tmp_path,
        ANIMAHUB_TELEGRAM__ENABLED="true",
        ANIMAHUB_TELEGRAM__BOT_TOKEN="123456:test-token",
    )
    assert result["built"] == ["telegram", "web"]
    assert imported(result["modules"], PLATFORM_SDKS) == ["telegram"]


@pytest.mark.parametrize("args", [["--help"], ["people", "--help"], ["task", "list", "--help"]])
def test_help_imports_none_of_the_heavy_modules(tmp_path: Path, args: list[str]) -> None:
    result = run(CLI, tmp_path, *args)
    assert result["code"] == 0
    assert imported(result["modules"], (*HEAVY, *PLATFORM_SDKS, "pydantic_settings")) == []


def test_status_with_no_hub_running_imports_none_of_the_heavy_modules(tmp_path: Path) -> None:
    """It reads the settings and the run file, and says no hub runs (exit code 3)."""
    result = run(CLI, tmp_path, "status")
    assert result["code"] == 3
    assert imported(result["modules"], (*HEAVY, *PLATFORM_SDKS)) == []


def test_a_command_a_running_hub_serves_needs_no_hub_of_its_own() -> None:
    """The path to a running hub (hub/cli/client.py) is httpx alone: the in-process hub, the
    database and the memory are imported only when no hub runs."""
    code = (
        "import json, sys; import hub.cli.client, hub.cli.hub_api; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules = json.loads(done.stdout)
    assert "httpx" in modules
    heavy = tuple(name for name in HEAVY if name != "httpx")
    assert imported(modules, (*heavy, *PLATFORM_SDKS, "hub.memory.service")) == []


APP = """
import json, sys
from hub.api.server import create_app
from hub.app import Hub
from hub.settings import load_settings
create_app(Hub(load_settings()))
print(json.dumps({"modules": sorted(sys.modules)}), file=sys.stderr)
"""


def test_the_app_a_start_serves_imports_no_mcp_sdk_until_mcp_is_asked(tmp_path: Path) -> None:
    """The MCP SDK is /mcp's first request's to import (hub/api/mcp_mount.py), not each
    start's; tests/api/test_mcp.py has /mcp answering."""
    result = run(APP, tmp_path)
    assert imported(result["modules"], ("mcp", "hub.api.mcp_server")) == []
