"""`animahub people link|unlink|merge|forget`, `people owner --new` and `token create --new`
as a new user meets them: what each refuses, in one line, and what it says it did."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.test_cli_arguments import invoke, run


@pytest.fixture(autouse=True)
def hub_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "80")  # a terminal's width: rich wraps at it
    run("init", "--owner", "Owner")
    return home


def test_link_refuses_to_merge_a_whole_person_unless_told_to() -> None:
    run("people", "invite", "Carol")
    run("token", "create", "--person", "Carol")
    run("people", "link", "carol", "telegram:5551234")
    run("people", "invite", "ghost")
    refused = invoke("people", "link", "ghost", "telegram:5551234")
    assert refused.exit_code == 1
    line = refused.output.strip()
    assert "\n" not in line and "Carol (carol)" in line and "people merge carol ghost" in line
    assert "5551234" in run("people", "show", "carol")  # Carol is whole
    merged = run("people", "link", "ghost", "telegram:5551234", "--merge")
    assert "merged in: carol" in merged


def test_unlink_takes_one_of_several_accounts_on_a_platform() -> None:
    run("people", "invite", "Dana")
    run("people", "invite", "ghost")
    run("people", "merge", "Dana", "ghost")
    which = invoke("people", "unlink", "ghost", "web")
    assert which.exit_code == 1 and "all there is" not in which.output
    assert "ghost has 2 web accounts (web:dana, web:ghost)" in which.output
    assert "unlinked web:dana from ghost" in run("people", "unlink", "ghost", "web:dana")
    assert "dana" not in run("people", "show", "ghost").split("user id", 1)[1]


def test_new_refuses_a_name_the_hub_knows() -> None:
    """`--new` reused an existing Eve without a word."""
    run("people", "invite", "Eve")
    known = "is someone the hub knows already: Eve (eve); leave out --new to use them (HTTP 409)"
    token = invoke("token", "create", "--person", "eve", "--new")
    assert (token.exit_code, token.output.strip()) == (1, f"error: 'eve' {known}")
    owner = invoke("people", "owner", "EVE", "--new")
    assert (owner.exit_code, owner.output.strip()) == (1, f"error: 'EVE' {known}")
    assert "Owner (owner)" in run("people", "owner")
    assert "t-" not in run("token", "list")
    assert "Zoe (zoe)" in run("people", "owner", "Zoe", "--new")  # someone new still is


def test_forget_checks_the_name_before_asking() -> None:
    """It asked "Forget everything private to nobody, for good?" first."""
    unknown = invoke("people", "forget", "nobody", stdin="y\n")
    assert unknown.exit_code == 1
    assert unknown.output == "error: no person named 'nobody' (HTTP 404)\n"  # nothing asked
    run("people", "invite", "Carol")
    asked = invoke("people", "forget", "carol", stdin="n\n")
    assert asked.exit_code == 1
    assert asked.output.startswith("Forget everything private to Carol (carol), for good?")
    assert "forgotten: 0 memories" in invoke("people", "forget", "Carol", stdin="y\n").output


def test_unlink_says_what_it_did_in_one_line() -> None:
    """At 80 columns it broke mid-sentence: "it is a person of its own now,\\n5551234 (5551234)"."""
    run("people", "invite", "Margaret Hamilton-Whitfield")
    run("people", "link", "margaret hamilton-whitfield", "telegram:5551234")
    said = run("people", "unlink", "Margaret Hamilton-Whitfield", "telegram")
    assert said == (
        "unlinked telegram:5551234 from Margaret Hamilton-Whitfield "
        "(margaret-hamilton-whitfield); it is 5551234 now, a person of its own\n"
    )
