"""`animahub start` as a subprocess: chat over HTTP, restart, history still there; CLI."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from hub.cli.runfile import hold_data_root
from hub.store.db import Database
from hub.store.models import Person
from tests.e2e.hubproc import HubProcess, cli, free_port

pytestmark = pytest.mark.e2e


def chat(hub: HubProcess, name: str, message: str, **extra: str) -> list[dict[str, str]]:
    payload = {"message": message, "conversation_id": "e2e", "user": "alice", **extra}
    url = f"{hub.url}/api/chat/{name}"
    answer = httpx.stream("POST", url, json=payload, headers=hub.owner(), timeout=60)
    with answer as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: ")]


def test_chat_restart_and_history(tmp_path: Path) -> None:
    home = tmp_path / "home"
    init = cli(home, "init", "--demo")
    assert init.returncode == 0, init.stderr
    assert (home / "hub.toml").exists()
    assert sorted(p.name for p in (home / "animas").iterdir()) == ["aria", "kai", "mika"]

    stopped = cli(home, "status")
    assert stopped.returncode == 3 and "No hub is running" in stopped.stdout

    hub = HubProcess(home, free_port()).start()
    try:
        events = chat(hub, "aria", "Remember: the launch is on Friday")
        assert events[-1]["type"] == "done"
        reply = "".join(e.get("text", "") for e in events)
        assert "offline mode" in reply

        # While the hub runs, state-changing commands go through its API.
        created = cli(home, "anima", "create", "--name", "wren", "--role", "writer")
        assert created.returncode == 0, created.stderr
        assert "wren" in [a["name"] for a in hub.get("/api/animas")]
        said = cli(home, "chat", "wren", "hello from the CLI", "--user", "bob", "--new")
        assert said.returncode == 0, said.stderr
        assert "Wren" in said.stdout and "offline mode" in said.stdout
        status = cli(home, "status", COLUMNS="200")
        assert status.returncode == 0, status.stderr
        assert hub.url in status.stdout and "aria, kai, mika, wren" in status.stdout
        assert "offline mode" in status.stdout and "2 sent" in status.stdout
        assert "model workers" not in status.stdout

        # Memory search through the hub: results, or the hub's refusal in one line.
        found = cli(home, "memory", "search", "aria", "launch", COLUMNS="200")
        assert found.returncode == 0 and "launch is on Friday" in found.stdout, found.stderr
        nobody = cli(home, "memory", "search", "nobody", "launch")
        assert nobody.returncode == 1 and "Traceback" not in nobody.stderr, nobody.stderr
        assert nobody.stderr.strip() == "error: no Anima named 'nobody'"
        to_nobody = cli(home, "chat", "nobody", "hello")  # every refusal in the same words
        assert to_nobody.returncode == 1 and to_nobody.stderr == nobody.stderr
        nothing = cli(home, "memory", "search", "aria", "launch", "--layer", "procedures")
        assert nothing.returncode == 0
        assert nothing.stdout.strip() == "nothing in aria's memory matches that"
        wrong = cli(home, "memory", "search", "aria", "launch", "--scope", "friends")
        assert wrong.returncode == 2 and "bad scope 'friends'" in wrong.stderr
    finally:
        assert hub.stop() == 0
    assert "Application shutdown complete" in (home / "logs" / "hub.log").read_text()

    hub = HubProcess(home, free_port()).start()
    try:
        history = hub.get("/api/chat/aria/history", conversation_id="e2e", user="alice")["messages"]
        assert [m["author_kind"] for m in history] == ["person", "anima"]
        assert history[0]["text"] == "Remember: the launch is on Friday"
        assert history[1]["text"] == reply.strip()
        again = chat(hub, "aria", "When is the launch?")
        text = "".join(e.get("text", "") for e in again)
        assert "Remember: the launch is on Friday" in text  # the offline mode recalls the turn
    finally:
        hub.stop()
    logs = cli(home, "logs", "aria")
    assert logs.returncode == 0, logs.stderr
    # in words: who, where, how long, the model, what was recalled
    line = re.search(r"answered (\S+) in (.+?) in [\d.]+ s \((.+?); (\d+) memor", logs.stdout)
    assert line is not None, logs.stdout
    assert line.group(1) == "alice" and "web" in line.group(2) and line.group(3) == "offline mode"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_hub_stopped_by_a_signal_shuts_down_and_exits_0(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """Ctrl-C is how a person stops the hub: it exited 130, so `make run` ended in an error."""
    home = tmp_path / "home"
    cli(home, "init", "--demo")
    hub = HubProcess(home, free_port()).start()

    assert hub.stop(sig) == 0
    assert "Application shutdown complete" in (home / "logs" / "hub.log").read_text()


def test_second_hub_on_same_data_root_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli(home, "init", "--demo")
    hub = HubProcess(home, free_port()).start()
    try:
        second = cli(home, "start", "--port", str(free_port()))
        assert second.returncode != 0
        assert f"a hub already runs on {home}, at {hub.url}" in second.stderr  # where it is
    finally:
        hub.stop()


def test_bad_config_stops_start_with_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli(home, "init")
    (home / "hub.toml").write_text('[server]\nport = "lots"\n')
    result = cli(home, "start")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "server.port" in lines[0]
    (home / "hub.toml").write_text("[server]\nport = 18555\n")
    refused = cli(home, "start", "--host", "0.0.0.0")
    assert refused.returncode == 2 and "api_token" in refused.stderr


@pytest.mark.parametrize(
    ("variable", "url", "said", "setting"),
    [
        (
            "ANIMAHUB_STORAGE__DATABASE_URL",
            "postgresql+psycopg://hub:secret@127.0.0.1:{port}/hub",
            "the database cannot be reached",
            "[storage] database_url",
        ),
        (
            "ANIMAHUB_MEMORY__QDRANT_URL",
            "http://127.0.0.1:{port}",
            "memory's index cannot be reached",
            "[memory] qdrant_url",
        ),
    ],
    ids=["database", "qdrant"],
)
def test_an_unreachable_store_stops_start_with_one_line(
    tmp_path: Path, variable: str, url: str, said: str, setting: str
) -> None:
    home = tmp_path / "home"
    cli(home, "init")
    result = cli(home, "start", **{variable: url.format(port=free_port())})
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert said in lines[0] and setting in lines[0]
    assert "secret" not in result.stderr


def test_a_held_data_root_or_a_refusal_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # Two `memory search` commands at once with no hub running: the second once printed a
    # forty-line traceback.
    home = tmp_path / "home"
    cli(home, "init", "--demo")
    with hold_data_root(home):  # as a command working on the data root does
        result = cli(home, "memory", "search", "aria", "tea")
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"another AnimaHub process is using {home}" in lines[0] and "try again" in lines[0]
    assert cli(home, "memory", "search", "aria", "tea").returncode == 0  # free again
    # A refusal inside the command's in-process hub: one line too, not a traceback.
    for args in (("chat", "nosuch", "hi"), ("heartbeat", "nosuch")):
        refused = cli(home, *args)
        lines = [line for line in refused.stderr.splitlines() if line.strip()]
        assert refused.returncode == 1 and len(lines) == 1, refused.stderr
        assert "no Anima named 'nosuch'" in lines[0], lines


def _person_named(home: Path, name: str) -> str:
    """The id of the one person called `name`, from the database no hub holds now."""
    db = Database(f"sqlite:///{home / 'hub.db'}")
    try:
        with db.session() as session:
            (person,) = session.exec(select(Person).where(Person.display_name == name)).all()
    finally:
        db.dispose()
    return person.id


def test_cli_works_in_process_when_no_hub_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "init", "--demo").returncode == 0
    again = cli(home, "init", "--demo")  # idempotent: nothing recreated, no error
    assert again.returncode == 0 and "created" not in again.stdout
    created = cli(
        home, "anima", "create", "--name", "otto", "--role", "ops", "--supervisor", "mika"
    )
    assert created.returncode == 0, created.stderr
    listed = cli(home, "anima", "list")
    assert "otto" in listed.stdout and "ops" in listed.stdout
    said = cli(home, "chat", "otto", "status report please", "--user", "carol", "--new")
    assert said.returncode == 0, said.stderr
    assert "Otto" in said.stdout and "carol" in said.stdout
    unknown = cli(home, "chat", "ghost", "hello")
    assert unknown.returncode == 1
    assert unknown.stderr == "error: no Anima named 'ghost'\n"  # no hub ran: no HTTP status
    bad = cli(home, "anima", "create", "--name", "Bad Name", "--role", "ops")
    assert bad.returncode == 1 and "invalid Anima name" in bad.stderr
    shutil.rmtree(home / "index")  # lost: rebuilt from the markdown
    repaired = cli(home, "repair-rag", "--anima", "otto")
    assert repaired.returncode == 0, repaired.stderr
    assert "re-indexed 1 Anima(s)" in repaired.stdout
    wide = {"COLUMNS": "250"}  # one table row a result, for the assertions
    carol = _person_named(home, "carol")  # an opaque id: made from no name
    found = cli(
        home, "memory", "search", "otto", "status report", "--scope", f"person:{carol}", **wide
    )
    assert found.returncode == 0 and "status report please" in found.stdout
    hidden = cli(
        home, "memory", "search", "otto", "status report", "--scope", "person:dave", **wide
    )
    assert "status report please" not in hidden.stdout
    # Everything the in-process chat did is on disk for the next hub.
    hub = HubProcess(home, free_port()).start()
    try:
        history = hub.get("/api/chat/otto/history", conversation_id="cli", user="carol")["messages"]
        assert [m["author_kind"] for m in history] == ["person", "anima"]
    finally:
        hub.stop()


def test_platforms_that_cannot_be_reached_do_not_stop_the_hub(tmp_path: Path) -> None:
    """Every platform enabled with a token and nothing listening where its API should be:
    the hub starts, the web chat answers, health and `animahub status` name each one down."""
    home = tmp_path / "home"
    cli(home, "init", "--demo")
    nowhere = f"http://127.0.0.1:{free_port()}"
    platforms = {
        "ANIMAHUB_SLACK__ENABLED": "true",
        "ANIMAHUB_SLACK__BOT_TOKEN": "xoxb-1-2",
        "ANIMAHUB_SLACK__APP_TOKEN": "xapp-1-2",
        "ANIMAHUB_SLACK__API_URL": f"{nowhere}/api/",
        "ANIMAHUB_DISCORD__ENABLED": "true",
        "ANIMAHUB_DISCORD__BOT_TOKEN": "MTIz.discord",
        "ANIMAHUB_DISCORD__API_URL": f"{nowhere}/api/v10",
        "ANIMAHUB_TELEGRAM__ENABLED": "true",
        "ANIMAHUB_TELEGRAM__BOT_TOKEN": "123:telegram",
        "ANIMAHUB_TELEGRAM__API_URL": nowhere,
        "ANIMAHUB_LINE__ENABLED": "true",
        "ANIMAHUB_LINE__CHANNEL_SECRET": "line-secret",
        "ANIMAHUB_LINE__CHANNEL_ACCESS_TOKEN": "line-token",
        "ANIMAHUB_LINE__API_URL": nowhere,
    }
    hub = HubProcess(home, free_port(), **platforms).start()
    try:
        events = chat(hub, "aria", "are you there?")
        assert events[-1]["type"] == "done"
        health = hub.get("/api/system/health")
        assert health["status"] == "degraded"
        for name in ("slack", "discord", "telegram", "line"):
            state = health["platforms"][name]
            assert state["state"] in ("down", "starting"), (name, state)
        assert health["platforms"]["web"]["state"] == "up"
        status = cli(home, "status", COLUMNS="250", **platforms)
        assert status.returncode == 0, status.stderr
        assert "degraded" in status.stdout and "web  up" in status.stdout
        went_down = health["platforms"]["telegram"]["since"][11:19]
        assert f"telegram  down since {went_down} UTC: " in status.stdout
    finally:
        hub.stop()
    log = (home / "logs" / "hub.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    for name in ("slack", "discord", "telegram", "line"):
        assert f"{name} is down:" in log, name


def test_a_busy_port_says_how_to_choose_another(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli(home, "init")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = cli(home, "start", "--port", str(port))
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"port {port}" in lines[0] and "--port" in lines[0]
    assert "ANIMAHUB_SERVER__PORT" in lines[0]


def test_a_toml_syntax_error_names_file_and_line_with_one_prefix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli(home, "init")
    (home / "hub.toml").write_text('[llm]\nmodel = "x"\n[server\n')
    result = cli(home, "status")
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.strip()]
    assert line.startswith("error: config: ") and "config: config" not in line
    assert str(home / "hub.toml") in line and "line 3" in line
