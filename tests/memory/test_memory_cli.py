"""`animahub repair-rag` and `animahub memory search` with no hub running: repair touches
only the Animas it is asked to (with `--anima NAME --full` the others' index is left as it
was); search takes the kind of memory (`--layer`) apart from whose (`--scope`)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hub.cli.main import app
from hub.cli.runfile import hold_data_root
from hub.memory.index import MemoryFilter
from hub.memory.service import MemoryService
from hub.settings import load_settings

# Wide enough that a result row is not wrapped into many short lines.
WIDE = {"COLUMNS": "250"}


def counts() -> dict[str, int]:
    """The index's points per Anima as the repair left them: read without `start()`, which
    would rebuild an emptied Anima and hide the damage."""

    async def count() -> dict[str, int]:
        settings = load_settings()
        with hold_data_root(settings.home):
            memory = MemoryService.from_settings(settings.home, settings.memory)
            try:
                return {n: memory.index.count(MemoryFilter(anima=n)) for n in ("aria", "kai")}
            finally:
                await memory.stop()

    return asyncio.run(count())


def demo_hub(
    monkeypatch: pytest.MonkeyPatch, home: Path, owner: str, *said: tuple[str, str]
) -> CliRunner:
    """A demo data root in `home`, owned by `owner`, each (Anima, message) said to it through
    `animahub chat`, with no hub running."""
    monkeypatch.setenv("ANIMAHUB_HOME", str(home))
    runner = CliRunner()
    for args in (["init", "--demo", "--owner", owner], *(["chat", a, m] for a, m in said)):
        done = runner.invoke(app, args)
        assert done.exit_code == 0, done.output
    return runner


def test_repair_rag_full_for_one_anima_leaves_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = demo_hub(
        monkeypatch,
        tmp_path / "home",
        "Sam",
        ("aria", "The staging database password rotates monthly."),
        ("kai", "The build runs on ci-2 since Tuesday."),
    )
    before = counts()
    assert before["aria"] > 0 and before["kai"] > 0
    repaired = runner.invoke(app, ["repair-rag", "--anima", "aria", "--full"])
    assert repaired.exit_code == 0, repaired.output
    assert "re-indexed 1 Anima(s)" in repaired.output
    assert counts() == before  # aria rebuilt to the same points; kai untouched

    found = runner.invoke(app, ["memory", "search", "aria", "staging password"], env=WIDE)
    assert found.exit_code == 0 and "rotates monthly" in found.output, found.output
    knowledge = runner.invoke(
        app, ["memory", "search", "aria", "staging password", "--layer", "knowledge"], env=WIDE
    )
    assert knowledge.exit_code == 0 and "rotates monthly" not in knowledge.output  # an episode
    assert "nothing in aria's memory matches that" in knowledge.output
    wrong = runner.invoke(app, ["memory", "search", "aria", "x", "--layer", "dreams"])
    assert wrong.exit_code == 2 and "bad layer 'dreams'" in wrong.output
    empty = runner.invoke(app, ["memory", "search", "aria", "  "])
    assert empty.exit_code == 2 and "the query is empty" in empty.output
    # Scopes are checked with no hub running too: a wrong one once found nothing, silently.
    wrong = runner.invoke(app, ["memory", "search", "aria", "x", "--scope", "friends"])
    assert wrong.exit_code == 2 and "bad scope 'friends'" in wrong.output


def test_brackets_in_a_memory_and_in_help_are_printed_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rich markup once read "[/]" in a memory as a closing tag (`memory search` failed with
    MarkupError) and "[people]" in help text as a style (it vanished)."""
    said = ("aria", "The wiki markup for bold is [b]text[/b] and [/] closes any tag.")
    runner = demo_hub(monkeypatch, tmp_path / "home", "Sam", said)
    found = runner.invoke(app, ["memory", "search", "aria", "wiki markup bold"], env=WIDE)
    assert found.exit_code == 0, found.output
    assert "[b]text[/b] and [/] closes" in found.output
    shown = runner.invoke(app, ["pairing", "--help"], env=WIDE)
    assert "([people] dm_policy = pairing)" in shown.output


def test_a_search_with_no_hub_running_knows_the_people_a_query_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the hub stopped, `memory search` once ranked without the people retriever (no
    names known), so it ranked otherwise than the same search through the running hub."""
    said = ("aria", "I prefer tea over coffee.")
    runner = demo_hub(monkeypatch, tmp_path / "home", "Sam Carter", said)
    found = runner.invoke(app, ["memory", "search", "aria", "What does Sam drink?"], env=WIDE)
    assert found.exit_code == 0, found.output
    assert "said by Sam Carter, whom the query names" in found.output  # a name, not an id


def test_in_a_small_memory_what_matches_leads_not_what_sits_in_the_middle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six lines by one person, none of them matching strongly: the lifts between sections
    once outweighed the fusion's margins, so the newest line (with no line after it to lift
    it) came fifth when it was the one asked about."""
    lines = (
        "My office door code is 7720.",
        "My garage door code is 3141.",
        "The deploy key for staging is STG-KEY-9913.",
        "I had a lovely weekend hiking in the Alps with my sister.",
        "We decided to ship the beta on Friday.",
        "I prefer tea over coffee.",
    )
    runner = demo_hub(monkeypatch, tmp_path / "home", "Dana Scully", *(("aria", t) for t in lines))
    for query in ("What does Dana like to drink?", "Does Dana prefer coffee?"):
        found = runner.invoke(app, ["memory", "search", "aria", query], env=WIDE)
        assert found.exit_code == 0, found.output
        at = {line: found.output.find(line[:20]) for line in lines}  # the table wraps lines
        assert min(at.values()) >= 0, found.output
        assert min(lines, key=at.__getitem__) == "I prefer tea over coffee.", (query, at)


def test_a_cut_result_never_shows_an_open_bold_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table cuts a result at 160 characters; cut inside "**aria**", the rest of the
    name once showed as "**ari…" (each length below puts the cut at another point of it)."""
    said = [("aria", "The kumquat order " + "x" * (n - 18)) for n in (112, 113, 114, 115)]
    runner = demo_hub(monkeypatch, tmp_path / "home", "Sam", *said)
    found = runner.invoke(app, ["memory", "search", "aria", "kumquat order"], env=WIDE)
    assert found.exit_code == 0 and found.output.count("kumquat order") == 4, found.output
    assert "**" not in found.output


def test_a_long_result_shows_the_sentence_that_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result past 160 characters once showed its start, here only the week's chores."""
    chores = " ".join(f"Chore {n} is to water the plants on shelf {n}." for n in range(1, 7))
    said = ("aria", f"{chores} The kumquat order ships on Friday.")
    runner = demo_hub(monkeypatch, tmp_path / "home", "Sam", said)
    found = runner.invoke(app, ["memory", "search", "aria", "kumquat order"], env=WIDE)
    assert found.exit_code == 0, found.output
    assert "… The kumquat order ships on Friday." in found.output
    assert "Chore 1 " not in found.output


def test_a_result_says_where_it_is_in_full_in_a_narrow_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A column of its own, the place was cut to "episodes/2026-1…" at 80 to 100 columns;
    under the text it is whole, and the layer is named as --layer names it."""
    runner = demo_hub(monkeypatch, tmp_path / "home", "Sam", ("aria", "The kumquat order is late."))
    found = runner.invoke(app, ["memory", "search", "aria", "kumquat"], env={"COLUMNS": "100"})
    assert found.exit_code == 0, found.output
    assert re.search(r"episodes/\d{4}-\d\d-\d\d\.md § \d\d:\d\d", found.output), found.output
    assert "│ episodes " in found.output and "episodic" not in found.output
