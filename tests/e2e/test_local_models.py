"""A new user's first hour with a model of their own: `animahub init --demo`, README's lines
for the server put into the hub.toml it wrote, `animahub start` (litellm in its model
worker process), and `animahub chat` answered by the server's fake."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from animahub_kit.fakes.local_models.server import FakeLocalServer
from animahub_kit.fakes.local_models.spec import spec_from_commands
from tests.api.test_local_models import local_toml, readme_servers
from tests.e2e.hubproc import HubProcess, cli, free_port


def edited(config: str, lines: str) -> str:
    """hub.toml as `init` wrote it, its [llm] keys set to README's values, as a user edits
    the file (the rest of the section left as it was)."""
    for key, value in tomllib.loads(lines)["llm"].items():
        config, done = re.subn(rf'(?m)^{key} = ""$', f'{key} = "{value}"', config, count=1)
        assert done == 1, f"hub.toml has no {key} line to fill in"
    return config


# vLLM: the case, an OpenAI-compatible server given no key (the placeholder is sent
# from the model worker); tests/api/test_local_models.py runs every server in-process.
@pytest.mark.parametrize("name", ["vLLM"])
def test_readme_lines_in_a_fresh_hub_answer_the_cli(tmp_path: Path, name: str) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo", "--owner", "Olivia").returncode == 0
    sh, lines = readme_servers()[name]
    spec = spec_from_commands([sh])
    with FakeLocalServer(spec) as fake:
        config = home / "hub.toml"
        config.write_text(edited(config.read_text(), local_toml(lines, spec, fake)))
        fake.queue_reply(f"{name} here, on your own machine.")
        hub = HubProcess(home, free_port(), OPENAI_API_KEY="", OLLAMA_API_BASE="").start()
        try:
            said = cli(home, "chat", "kai", "Are you there?")
        finally:
            assert hub.stop() == 0
    assert said.returncode == 0, said.stderr
    assert f"{name} here, on your own machine." in said.stdout
    assert len(fake.requests) == 1 and not fake.refused
