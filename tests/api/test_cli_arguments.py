"""Bad arguments on the command line: each is one `error: …` line, never a traceback, a
usage box or a new person made from a typo. No hub runs: each command goes through an
in-process hub's API, as the CLI is used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from hub.cli.main import app


def invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(app, list(args), input=stdin)


def run(*args: str) -> str:
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    monkeypatch.setenv("ANIMAHUB_MEMORY__ENABLED", "false")  # no index to open: faster
    monkeypatch.setenv("COLUMNS", "200")  # rich lines unwrapped
    run("init", "--demo", "--owner", "Dana Scully")
    return home


def test_a_name_that_matches_nobody_is_not_made_a_person_unless_asked(home: Path) -> None:
    refused = invoke("people", "owner", "nobody")
    assert refused.exit_code == 1
    assert refused.output.startswith("error: no person named 'nobody'; ")
    assert "--new" in refused.output and len(refused.output.splitlines()) == 1
    ghost = invoke("token", "create", "--person", "ghost2")
    assert ghost.exit_code == 1 and "no person named 'ghost2'" in ghost.output
    listed = run("people", "list")
    assert "nobody" not in listed and "ghost2" not in listed
    assert "owner: Dana Scully" in run("people", "owner")

    assert re.search(r"owner: Sam \(u-[0-9a-f]{10}\)", run("people", "owner", "Sam", "--new"))
    assert run("token", "create", "--person", "Ghost", "--new").splitlines()[-1].startswith("ahp_")
    # invite makes the person it is given, as it always did, and now says so (once)
    made = run("people", "invite", "Typo Persn")
    assert re.search(r"new person: Typo Persn \(u-[0-9a-f]{10}\)", made)
    assert "new person" not in run("people", "invite", "Typo Persn")


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("people", "show", ""), "NAME"),
        (("chat", "", "hi"), "NAME"),
        (("heartbeat", ""), "NAME"),
        (("people", "invite", ""), "NAME"),
        (("pairing", "approve", ""), "CODE"),
        (("people", "show", "  "), "NAME"),
        (("token", "create", "--person", " "), "--person"),
        (("people", "owner", ""), "NAME"),
        (("repair-rag", "--anima", ""), "--anima"),
    ],
)
def test_an_empty_name_or_code_is_a_usage_error(
    home: Path, args: tuple[str, ...], shown: str
) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.output) == (2, f"error: {shown} must not be empty\n")


@pytest.mark.parametrize(
    "args",
    [
        ("repair-rag", "--anima", "nobody"),
        ("chat", "nobody", "hi"),
        ("logs", "nobody"),
        ("heartbeat", "nobody"),
        ("mcp", "nobody"),
        ("consolidate", "nobody", "--daily"),
        ("memory", "restore", "nobody", "archive/forgotten/knowledge/x.md"),
        ("memory", "search", "nobody", "launch"),
    ],
)
def test_an_unknown_anima_is_the_same_one_line_everywhere(
    home: Path, args: tuple[str, ...]
) -> None:
    result = invoke(*args)
    assert (result.exit_code, result.output) == (1, "error: no Anima named 'nobody'\n")


def test_logs_n_is_how_many_lines_and_never_negative(home: Path) -> None:
    log = home / "logs" / "animas" / "aria.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("one\ntwo\nthree\n", encoding="utf-8")
    assert run("logs", "aria", "-n", "2") == "two\nthree\n"
    assert run("logs", "aria", "-n", "0") == ""
    for wrong in ("-1", "-5"):
        refused = invoke("logs", "aria", "-n", wrong)
        assert refused.exit_code == 2
        assert refused.output == f"error: -n {wrong}: the number of lines must be 0 or more\n"


def test_a_refused_mcp_token_is_one_line(home: Path) -> None:
    result = invoke("mcp", "aria", "--token", "bogus", stdin="")
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: the hub refused the token: ")
    assert result.output.endswith("(HTTP 401)\n") and len(result.output.splitlines()) == 1


def test_a_session_id_is_explained_in_words(home: Path) -> None:
    for wrong in ("", "a b"):
        result = invoke("chat", "aria", "hi", "--conversation", wrong)
        assert result.exit_code == 2
        assert "letters, digits, '_', '.' or '-'" in result.output
        assert "pattern" not in result.output and "^" not in result.output
    named = invoke("chat", "aria", "hi", "--user", "no/slashes#here")
    assert named.exit_code == 2 and "is not a person's id or name: use 1 to 64" in named.output
    assert "pattern" not in named.output and "^" not in named.output


def test_link_knows_the_platforms_and_unlink_says_what_it_did(home: Path) -> None:
    run("people", "invite", "Jane Roe")
    bad = invoke("people", "link", "Jane Roe", "notaplatform:1")
    assert bad.exit_code == 1 and "no platform named 'notaplatform'" in bad.output
    assert "slack, discord, telegram, line, web" in bad.output
    assert "notaplatform" not in run("people", "list")

    run("people", "link", "Jane Roe", "telegram:12345")
    said = run("people", "unlink", "Jane Roe", "telegram")
    assert re.fullmatch(  # ids are opaque, made from no name
        r"unlinked telegram:12345 from Jane Roe \(u-[0-9a-f]{10}\); "
        r"it is 12345 \(u-[0-9a-f]{10}\) now, a person of its own\n",
        said,
    )
    again = invoke("people", "unlink", "Jane Roe", "telegram")
    assert again.exit_code == 1
    assert "No telegram account is linked to Jane Roe." in again.output
    only = invoke("people", "unlink", "Jane Roe", "web")
    assert "Jane Roe's web account is all there is" in only.output


def test_forget_answered_no_says_nothing_was_forgotten(home: Path) -> None:
    result = invoke("people", "forget", "Dana Scully", stdin="n\n")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "nothing was forgotten of Dana Scully"
