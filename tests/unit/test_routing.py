"""Tests for hub.inbound.routing: mention > thread > channel binding > DM default > hub default."""

from __future__ import annotations

import pytest

from hub.inbound.routing import Router
from hub.messages import Address, AddressKind, Inbound, PlatformUser
from hub.people.identity import PersonView
from hub.store.db import Database
from hub.store.models import ChannelBinding, Turn

ANIMAS = frozenset({"mika", "aria", "kai"})
DEFAULT = "mika"
CHANNEL = Address("web", "local", "general")
THREAD = CHANNEL.in_thread("1700000000.0001")
DM = Address("web", "local", "dm-alice", kind=AddressKind.DM)
ALICE = PlatformUser("web", "alice", "Alice")


@pytest.fixture
def router(db: Database) -> Router:
    return Router(db, DEFAULT)


def person(default_anima: str | None = None) -> PersonView:
    return PersonView("alice", "Alice", (), "UTC", "en", default_anima)


def inbound(text: str, address: Address = CHANNEL, mentions: tuple[str, ...] = ()) -> Inbound:
    return Inbound(event_id="e1", address=address, sender=ALICE, text=text, mentions=mentions)


def add_turn(db: Database, address: Address, anima: str) -> None:
    with db.session() as session:
        session.add(
            Turn(
                conversation=str(address),
                channel_key=address.channel_key,
                anima=anima,
                role="assistant",
                text=f"{anima} answered",
            )
        )


def bind(db: Database, address: Address, anima: str) -> None:
    with db.session() as session:
        session.add(ChannelBinding(channel_key=address.channel_key, anima=anima))


# --- mention -------------------------------------------------------------------------------


def test_adapter_mention_wins_over_every_other_rule(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "aria")
    bind(db, THREAD, "aria")

    chosen = router.route(inbound("please look", THREAD, mentions=("kai",)), person(), ANIMAS)

    assert chosen == "kai"


def test_at_mention_in_text_wins_over_every_other_rule(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "aria")
    bind(db, THREAD, "aria")

    assert router.route(inbound("can @kai check the build?", THREAD), person(), ANIMAS) == "kai"


def test_at_mention_is_case_insensitive(router: Router) -> None:
    assert router.route(inbound("(@Kai) thoughts?"), person(), ANIMAS) == "kai"


@pytest.mark.parametrize("text", ["kai: do this", "Kai, can you do this?", "  kai : now"])
def test_vocative_wins_over_binding(router: Router, db: Database, text: str) -> None:
    bind(db, CHANNEL, "aria")

    assert router.route(inbound(text), person(), ANIMAS) == "kai"


def test_first_mention_in_text_wins(router: Router) -> None:
    assert router.route(inbound("@aria and @kai, compare notes"), person(), ANIMAS) == "aria"


def test_unknown_at_mention_is_ignored(router: Router, db: Database) -> None:
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("@nobody do this"), person(), ANIMAS) == "aria"


def test_unknown_adapter_mention_is_ignored(router: Router) -> None:
    chosen = router.route(inbound("hi", mentions=("nobody",)), person(), ANIMAS)

    assert chosen == DEFAULT


def test_unknown_vocative_is_ignored(router: Router) -> None:
    assert router.route(inbound("note: kai is busy"), person(), ANIMAS) == DEFAULT


def test_at_inside_a_word_is_not_a_mention(router: Router) -> None:
    assert router.route(inbound("write to bob@kai.example"), person(), ANIMAS) == DEFAULT


# --- thread --------------------------------------------------------------------------------


def test_thread_continues_with_the_anima_that_answered(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "kai")
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("and then?", THREAD), person(), ANIMAS) == "kai"


def test_thread_yields_to_mention(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "kai")

    assert router.route(inbound("@aria what do you think?", THREAD), person(), ANIMAS) == "aria"


def test_thread_follows_the_latest_turn(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "aria")
    add_turn(db, THREAD, "kai")

    assert router.route(inbound("and then?", THREAD), person(), ANIMAS) == "kai"


def test_thread_ignores_turns_of_other_conversations(router: Router, db: Database) -> None:
    add_turn(db, CHANNEL.in_thread("other-thread"), "kai")
    add_turn(db, Address("web", "local", "random", "1700000000.0001"), "aria")

    assert router.route(inbound("hello", THREAD), person(), ANIMAS) == DEFAULT


def test_thread_of_a_removed_anima_falls_through(router: Router, db: Database) -> None:
    add_turn(db, THREAD, "ghost")
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("still there?", THREAD), person(), ANIMAS) == "aria"


def test_thread_rule_does_not_apply_without_a_thread(router: Router, db: Database) -> None:
    add_turn(db, CHANNEL, "kai")

    assert router.route(inbound("hello everyone"), person(), ANIMAS) == DEFAULT


def test_dm_continues_with_the_anima_that_answered(router: Router, db: Database) -> None:
    add_turn(db, DM, "aria")

    assert router.route(inbound("thanks", DM), person(default_anima="kai"), ANIMAS) == "aria"


# --- channel binding -----------------------------------------------------------------------


def test_binding_wins_over_hub_default(router: Router, db: Database) -> None:
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("hello"), person(), ANIMAS) == "aria"


def test_binding_covers_new_threads_of_its_channel(router: Router, db: Database) -> None:
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("new topic", THREAD), person(), ANIMAS) == "aria"


def test_binding_is_per_channel(router: Router, db: Database) -> None:
    bind(db, Address("web", "local", "random"), "aria")

    assert router.route(inbound("hello"), person(), ANIMAS) == DEFAULT


def test_binding_to_a_removed_anima_falls_through(router: Router, db: Database) -> None:
    bind(db, CHANNEL, "ghost")

    assert router.route(inbound("hello"), person(), ANIMAS) == DEFAULT


# --- DM default ----------------------------------------------------------------------------


def test_dm_default_wins_over_hub_default(router: Router) -> None:
    assert router.route(inbound("hi", DM), person(default_anima="kai"), ANIMAS) == "kai"


def test_dm_default_yields_to_binding(router: Router, db: Database) -> None:
    bind(db, DM, "aria")

    assert router.route(inbound("hi", DM), person(default_anima="kai"), ANIMAS) == "aria"


def test_dm_default_yields_to_mention(router: Router) -> None:
    assert router.route(inbound("@aria hi", DM), person(default_anima="kai"), ANIMAS) == "aria"


def test_dm_default_does_not_apply_in_a_channel(router: Router) -> None:
    assert router.route(inbound("hi"), person(default_anima="kai"), ANIMAS) == DEFAULT


def test_dm_default_of_a_removed_anima_falls_through(router: Router) -> None:
    assert router.route(inbound("hi", DM), person(default_anima="ghost"), ANIMAS) == DEFAULT


# --- hub default ---------------------------------------------------------------------------


def test_hub_default_when_nothing_else_decides(router: Router) -> None:
    assert router.route(inbound("hello", DM), person(), ANIMAS) == DEFAULT


def test_none_when_no_rule_matches_and_no_default(db: Database) -> None:
    router = Router(db, "")

    assert router.route(inbound("hello"), person(), ANIMAS) is None
    assert router.route(inbound("hello", DM), person(), ANIMAS) is None


def test_none_when_the_hub_default_does_not_exist(db: Database) -> None:
    assert Router(db, "ghost").route(inbound("hello"), person(), ANIMAS) is None


def test_no_animas_means_no_answer(router: Router, db: Database) -> None:
    bind(db, CHANNEL, "aria")

    assert router.route(inbound("@kai hello"), person(default_anima="kai"), set()) is None
