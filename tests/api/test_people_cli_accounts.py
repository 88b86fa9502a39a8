"""`animahub people link|unlink|merge|forget`, `people owner --new` and `token create --new`
as a new user meets them: what each refuses, in one line, and what it says it did."""

from __future__ import annotations

import re
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


def person_id(name: str) -> str:
    """The id `people show NAME` prints, `Carol (u-3f1c9a2b7e)`: ids are made from no name."""
    found = re.search(r"\((u-[0-9a-f]{10})\)", run("people", "show", name).splitlines()[0])
    assert found is not None
    return found[1]


def test_link_refuses_to_merge_a_whole_person_unless_told_to() -> None:
    run("people", "invite", "Carol")
    run("token", "create", "--person", "Carol")
    run("people", "link", "carol", "telegram:5551234")
    run("people", "invite", "ghost")
    carol, ghost = person_id("carol"), person_id("ghost")
    refused = invoke("people", "link", "ghost", "telegram:5551234")
    assert refused.exit_code == 1
    line = refused.output.strip()
    assert "\n" not in line and f"Carol ({carol})" in line
    assert f"people merge {carol} {ghost}" in line
    assert "5551234" in run("people", "show", "carol")  # Carol is whole
    merged = run("people", "link", "ghost", "telegram:5551234", "--merge")
    assert f"merged in: {carol}" in merged


def test_unlink_takes_one_of_several_accounts_on_a_platform() -> None:
    run("people", "invite", "Dana")
    run("people", "invite", "ghost")
    dana, ghost = person_id("Dana"), person_id("ghost")
    run("people", "merge", "Dana", "ghost")
    which = invoke("people", "unlink", "ghost", "web")
    assert which.exit_code == 1 and "all there is" not in which.output
    assert f"ghost has 2 web accounts ({', '.join(sorted([f'web:{dana}', f'web:{ghost}']))})" in (
        which.output.replace("\n", " ")
    )
    assert f"unlinked web:{dana} from ghost" in run("people", "unlink", "ghost", f"web:{dana}")
    assert dana not in run("people", "show", "ghost").split("user id", 1)[1]


def test_new_is_someone_new_and_then_the_name_is_asked_about() -> None:
    """`--new` reused an existing Eve without a word; now it makes a second Eve, and from
    then on the name "Eve" picks neither: the command lists both, with their accounts, and
    without a terminal to ask on stops, for the id."""
    run("people", "invite", "Eve")
    first = person_id("Eve")
    made = run("token", "create", "--person", "eve", "--new")
    assert f"for {first}" not in made  # someone new, not the Eve the hub knew
    owner = invoke("people", "owner", "EVE")
    assert owner.exit_code == 1
    assert "'EVE' is a name, not a person id; it may be:" in owner.output
    assert first in owner.output and f"web:{first}" in owner.output
    assert "name the person by id (or --new for someone new)" in owner.output
    assert "Owner (" in run("people", "owner")  # unchanged
    assert f"Eve ({first})" in run("people", "owner", first)  # by id
    assert re.search(r"Zoe \(u-[0-9a-f]{10}\)", run("people", "owner", "Zoe", "--new"))


def test_forget_checks_the_name_before_asking() -> None:
    """It asked "Forget everything private to nobody, for good?" first."""
    unknown = invoke("people", "forget", "nobody", stdin="y\n")
    assert unknown.exit_code == 1
    assert unknown.output == "error: no person named 'nobody' (HTTP 404)\n"  # nothing asked
    run("people", "invite", "Carol")
    asked = invoke("people", "forget", "carol", stdin="n\n")
    assert asked.exit_code == 1
    carol = person_id("carol")
    assert asked.output.startswith(f"Forget everything private to Carol ({carol}), for good?")
    assert "forgotten: 0 memories" in invoke("people", "forget", "Carol", stdin="y\n").output


def test_unlink_says_what_it_did_in_one_line() -> None:
    """At 80 columns it broke mid-sentence: "it is a person of its own now,\\n5551234 (5551234)"."""
    run("people", "invite", "Margaret Hamilton-Whitfield")
    run("people", "link", "margaret hamilton-whitfield", "telegram:5551234")
    margaret = person_id("Margaret Hamilton-Whitfield")
    said = run("people", "unlink", "Margaret Hamilton-Whitfield", "telegram")
    assert re.fullmatch(
        f"unlinked telegram:5551234 from Margaret Hamilton-Whitfield \\({margaret}\\); it is "
        r"5551234 \(u-[0-9a-f]{10}\) now, a person of its own\n",
        said,
    )
