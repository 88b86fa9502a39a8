"""What Animas learn about people lands in the shared profile."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from hub.markdown_files import write_document
from hub.memory.profiles import LEARNED, Learned, Profiles, self_statements


def make_profile(folder: Path) -> None:
    write_document(
        folder / "alice.md",
        {"id": "alice", "roles": []},
        f"# Alice\n\n{LEARNED}\n\nHand-written note stays.\n",
    )


def test_facts_are_appended_once_with_who_and_when(tmp_path: Path) -> None:
    make_profile(tmp_path)
    profiles = Profiles(tmp_path)
    assert profiles.add("alice", "Prefers short answers", "aria", date(2026, 11, 29), private=False)
    assert not profiles.add(
        "alice", "Prefers short answers", "kai", date(2026, 11, 30), private=False
    )
    assert profiles.add(
        "alice", "Works on the billing team", "kai", date(2026, 11, 30), private=False
    )
    assert profiles.learned("alice") == [
        "Prefers short answers _(aria, 2026-11-29)_",
        "Works on the billing team _(kai, 2026-11-30)_",
    ]
    text = (tmp_path / "alice.md").read_text()
    assert "Hand-written note stays." in text and "id: alice" in text
    assert not profiles.add("nobody", "x", "aria", date(2026, 11, 29), private=False)


def test_secrets_never_reach_a_profile(tmp_path: Path) -> None:
    make_profile(tmp_path)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # random-looking, as real ones are
    Profiles(tmp_path).add("alice", f"her token is {token}", "aria", date(2026, 1, 1), private=True)
    assert "ghp_" not in (tmp_path / "alice.md").read_text()


def test_what_was_learned_in_a_dm_is_left_out_of_channels(tmp_path: Path) -> None:
    make_profile(tmp_path)
    profiles = Profiles(tmp_path)
    assert profiles.add("alice", "My locker code is 4471", "aria", date(2026, 1, 1), private=True)
    assert profiles.add("alice", "Leads the QA team", "kai", date(2026, 1, 2), private=False)
    assert profiles.learned("alice", in_dm=True) == [
        "My locker code is 4471 _(aria, 2026-01-01, in a DM)_",
        "Leads the QA team _(kai, 2026-01-02)_",
    ]
    assert profiles.learned("alice", in_dm=False) == ["Leads the QA team _(kai, 2026-01-02)_"]


def test_self_statements_are_found() -> None:
    text = "Hi! I'm Alice from billing. The build is red. My favourite editor is vim. ok?"
    assert self_statements(text) == ["I'm Alice from billing", "My favourite editor is vim"]
    assert self_statements("What time is it? Is the build red?") == []
    assert self_statements("I prefer tea over coffee") == ["I prefer tea over coffee"]
    said = "こんにちは。私はコーヒーよりお茶が好きです。私の名前は健二です。"
    assert self_statements(said) == ["私はコーヒーよりお茶が好きです", "私の名前は健二です"]
    assert self_statements("我住在上海，在银行工作。你呢？") == ["我住在上海，在银行工作"]
    assert self_statements("私はお茶が好きですか？我是谁呢？来週京都へ行きます。") == []


def test_a_secret_said_of_oneself_is_no_fact() -> None:
    # The text arrives redacted; a clause that held the secret tells an Anima nothing.
    pin = "[REDACTED:password]"
    assert self_statements(f"I prefer tea, and my PIN is {pin}") == ["I prefer tea"]
    assert self_statements(f"My PIN is {pin}, and I live in Leeds.") == ["I live in Leeds"]
    assert self_statements(f"my PIN is {pin}") == []
    assert self_statements(f"我住在上海，密码是{pin}") == ["我住在上海"]


def test_a_learned_line_reads_back_as_fact_anima_day_and_where() -> None:
    assert Learned.parse("Leads the QA team _(kai, 2026-01-02)_") == Learned(
        "Leads the QA team", "kai", "2026-01-02", in_dm=False
    )
    assert Learned.parse("Lives in Lisbon (Alfama) _(aria, 2026-12-01, in a DM)_") == Learned(
        "Lives in Lisbon (Alfama)", "aria", "2026-12-01", in_dm=True
    )
    assert Learned.parse("Written by hand") == Learned("Written by hand")
