"""Recall's helpers of the fused ranking: a hit lifts the section before it
(`lift_previous`), never past the search's own filter; what a named person said is lifted
(`lift_speakers`); the best hits lift the sections near them (`lift_neighbours`); a question
asking when lifts what says when (`lift_when`); and a query naming someone also searches what
that person said (`MemoryService.names_in`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hub.memory.documents import Layer, MemoryItem
from hub.memory.index import Hit, MemoryFilter, admits
from hub.memory.index_edge import EdgeIndex
from hub.memory.lexical import tokenize
from hub.memory.lifts import (
    NEIGHBOUR_LIFTERS,
    NEIGHBOUR_WEIGHT,
    PREVIOUS_CAP,
    PREVIOUS_WEIGHT,
    SPEAKER_WEIGHT,
    WHEN_WEIGHT,
    WITHIN_WEIGHT,
    lift_neighbours,
    lift_previous,
    lift_speakers,
    lift_when,
    lift_within,
)
from hub.memory.mentions import Mentions, Named
from hub.memory.recall import RecallScope, rescore, used
from hub.memory.service import MemoryService
from hub.settings import MemorySection

FLT = MemoryFilter("aria", scopes=("shared",), since=100.0)


def payload(prev: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"anima": "aria", "scope": "shared", "ts": 200.0, "prev": prev} | extra


def test_a_hit_lifts_its_previous_section_whether_or_not_it_was_a_hit() -> None:
    hits = [Hit("b", 1.0, payload(prev="a")), Hit("a", 0.2, payload()), Hit("d", 0.5, payload("c"))]
    fetched = {"c": payload()}
    asked: list[list[str]] = []

    def fetch(ids: list[str]) -> dict[str, dict[str, object]]:
        asked.append(ids)
        return {i: fetched[i] for i in ids if i in fetched}

    scores = {h.id: h.score for h in lift_previous(hits, FLT, fetch)}
    assert asked == [["c"]]  # only what was no hit is fetched
    assert scores == {"b": 1.0, "a": 0.2 + PREVIOUS_WEIGHT, "d": 0.5, "c": 0.5 * PREVIOUS_WEIGHT}


def test_a_hit_matching_by_its_own_words_stays_above_the_section_it_lifts() -> None:
    # "My office door code is 7720." then "My garage door code is 3141.", asked about the
    # garage: the office line matches nearly as well, and half the garage's score on top
    # would put it first.
    terms = frozenset(tokenize("What is my garage door code?"))
    office = Hit("office", 0.8, payload(text="My office door code is 7720."))
    garage = Hit("garage", 1.0, payload(prev="office", text="My garage door code is 3141."))
    lifted = lift_previous([garage, office], FLT, lambda ids: {}, terms)
    assert [h.id for h in lifted] == ["garage", "office"]
    assert lifted[1].score == PREVIOUS_CAP * 1.0
    # A reply that matched by its context, not its words, hands the statement before it
    # half its score, and the statement goes first.
    terms = frozenset(tokenize("When did Caroline go to the support group?"))
    news = Hit("news", 0.8, payload(text="Caroline: I went to the support group"))
    reply = Hit("reply", 1.0, payload(prev="news", text="Melanie: Wow, that's great!"))
    lifted = lift_previous([reply, news], FLT, lambda ids: {}, terms)
    assert [h.id for h in lifted] == ["news", "reply"]
    assert lifted[0].score == 0.8 + PREVIOUS_WEIGHT * 1.0
    # Above its lifter already, a section passes no one: it gains the whole lift.
    ahead = lift_previous(
        [Hit("b", 0.5, payload(prev="a", text="the support group")), Hit("a", 0.9, payload())],
        FLT,
        lambda ids: {},
        terms,
    )
    assert {h.id: h.score for h in ahead} == {"a": 0.9 + PREVIOUS_WEIGHT * 0.5, "b": 0.5}


def test_a_section_recalled_more_often_than_its_lifter_still_stays_below_it() -> None:
    # The office line was recalled while the garage line's turn was primed, many times: its
    # use lift must not undo the order the previous-section lift keeps.
    now = datetime(2026, 12, 5, tzinfo=UTC)
    terms = frozenset(tokenize("garage door code"))
    office = Hit("office", 0.8, payload(text="My office door code is 7720.", ts=now.timestamp()))
    garage = Hit(
        "garage",
        1.0,
        payload(prev="office", text="My garage door code is 3141.", ts=now.timestamp()),
    )
    counts = {"office": 100}
    hits = used([garage, office], now, lambda i: counts.get(i, 0))
    assert hits[1].score > 0.8  # the lift is there, and it is the office's
    ranked = rescore(lift_previous(hits, FLT, lambda ids: {}, terms), now, {}, boosted=True)
    assert [r.id for r in ranked] == ["garage", "office"]


def test_only_a_reply_lifts_the_section_before_it() -> None:
    # Dana's two messages in a row (a direct conversation: each section is hers, with the
    # Anima's answer) stand on their own; Bob's line after Dana's may answer it.
    hits = [
        Hit("tea", 1.0, payload(prev="beta", person="dana")),
        Hit("beta", 0.9, payload(prev="alps", person="dana")),
        Hit("reply", 0.8, payload(prev="news", person="bob")),
        Hit("anon", 0.7, payload(prev="older")),  # who said it is unknown: it may lift
    ]
    fetched = {"alps": payload(person="dana"), "news": payload(person="dana"), "older": payload()}
    lifted = {h.id: h.score for h in lift_previous(hits, FLT, lambda ids: fetched)}
    assert lifted == {
        "tea": 1.0,
        "beta": 0.9,  # its lifter is Dana's too
        "reply": 0.8,
        "anon": 0.7,
        "news": PREVIOUS_WEIGHT * 0.8,
        "older": PREVIOUS_WEIGHT * 0.7,
    }  # "alps", no hit and lifted by no reply, does not join


def test_a_fetched_section_outside_the_filter_does_not_join() -> None:
    private = payload(scope="person:dana")
    too_old = payload(ts=50.0)
    fetched = {"p": private, "o": too_old}
    hits = [Hit("x", 1.0, payload(prev="p")), Hit("y", 1.0, payload(prev="o"))]
    lifted = lift_previous(hits, FLT, lambda ids: {i: fetched[i] for i in ids})
    assert [h.id for h in lifted] == ["x", "y"]
    assert not admits(FLT, private) and not admits(FLT, too_old) and admits(FLT, payload())
    assert not admits(MemoryFilter("aria", min_importance=1.0), payload())  # no importance


def test_what_a_named_person_said_is_lifted_by_a_share_of_the_best_score() -> None:
    hits = [
        Hit("bob-1", 1.0, payload(person="bob")),
        Hit("dana-1", 0.8, payload(person="dana")),
        Hit("bob-2", 0.9, payload(person="bob")),
        Hit("nobody", 0.85, payload()),
    ]
    lifted = lift_speakers(hits, ("dana",))
    assert [h.id for h in lifted] == ["dana-1", "bob-1", "bob-2", "nobody"]
    assert lifted[0].score == 0.8 + SPEAKER_WEIGHT * 1.0
    assert lift_speakers(hits, ()) == hits  # nobody named: the order stands


def test_what_was_said_within_the_named_span_is_lifted_by_a_share_of_the_best_score() -> None:
    day = (datetime(2023, 2, 1, tzinfo=UTC), datetime(2023, 2, 2, tzinfo=UTC))
    inside, end = day[0].timestamp() + 3600, day[1].timestamp()
    hits = [
        Hit("before", 1.0, payload(ts=inside - 86400)),
        Hit("at-end", 0.9, payload(ts=end)),  # the span's end is the next day's start
        Hit("inside", 0.5, payload(ts=inside)),
    ]
    lifted = lift_within(hits, day)
    assert [h.id for h in lifted] == ["before", "at-end", "inside"]
    assert lifted[2].score == 0.5 + WITHIN_WEIGHT * 1.0
    assert lift_within(hits, None) == hits


def test_asked_when_what_says_when_is_lifted_by_a_share_of_the_best_score() -> None:
    hits = [
        Hit("best", 1.0, payload(text="The offsite was great fun")),
        Hit("dated", 0.4, payload(text="Yes, last Saturday!")),
        Hit("textless", 0.3, payload()),
    ]
    lifted = lift_when(hits, asks_when=True)
    assert [h.id for h in lifted] == ["best", "dated", "textless"]
    assert lifted[1].score == 0.4 + WHEN_WEIGHT * 1.0
    assert lift_when(hits, asks_when=False) == hits


def test_the_best_hits_lift_the_sections_within_two_of_them() -> None:
    # One conversation, s1 <- s2 <- s3 <- s4 by `prev`; s2 and s4 are among the best hits.
    chain = [Hit("s4", 1.0, payload("s3")), Hit("s2", 0.9, payload("s1"))]
    chain += [Hit("s3", 0.3, payload("s2")), Hit("s1", 0.2, payload())]
    filler = [Hit(f"f{n}", 0.5, payload()) for n in range(NEIGHBOUR_LIFTERS)]
    far = Hit("far", 0.1, payload("f0"))  # near only filler, past the lifters
    hits = [chain[0], chain[1], *filler, chain[2], chain[3], far]
    scores = {h.id: h.score for h in lift_neighbours(hits)}
    w = NEIGHBOUR_WEIGHT
    assert scores["s4"] == 1.0 + w * 0.9  # s2, two sections before it; s3 lifts no one
    assert scores["s3"] == 0.3 + w * 1.0  # between the two: the better one's lift, not both
    assert scores["s2"] == 0.9 + w * 1.0
    assert scores["s1"] == 0.2 + w * 0.9  # s4 is three away
    assert scores["far"] == 0.1 + w * 0.5  # f0 is a lifter; far itself lifts nothing
    assert scores["f0"] == 0.5 and scores["f1"] == 0.5
    assert lift_neighbours([]) == []


async def test_a_search_naming_a_day_finds_what_was_said_that_day(tmp_path: Path) -> None:
    # The day's line shares no word with the query, and Apart points its vector away.
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Apart())
    other_days = [datetime(2023, 1, 2, 9, 0, tzinfo=UTC) + timedelta(days=n) for n in range(60)]
    said = [(at, "The store found new wholesalers for the store, store news") for at in other_days]
    said.append((datetime(2023, 3, 10, 18, 0, tzinfo=UTC), "A supplier signed up today"))
    items = [
        memory_item(text, at, f"episodes/{at:%Y-%m-%d}.md", Layer.EPISODIC) for at, text in said
    ]
    await service.start(["aria"])
    try:
        await service.index_items("aria", items)
        scope = RecallScope("aria", None, None, is_dm=False)
        found = await service.search(scope, "What did the store find on 10 March, 2023?", limit=3)
        day = [r for r in found if r.id == items[-1].id]
        assert day, [r.text for r in found]
        assert "when" in day[0].why  # "from the time asked about"
        found = await service.search(scope, "What did the store find?", limit=3)
        assert items[-1].id not in [r.id for r in found]  # no day named: it is not found
    finally:
        await service.stop()


async def test_a_question_asking_when_lifts_what_says_when(tmp_path: Path) -> None:
    # The dated line shares no word with the queries, and Apart points its vector away.
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Apart())
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    said = [f"The supplier deal for the store, supplier deal news {n}" for n in range(12)]
    said.append("We signed it last Tuesday")
    items = [
        memory_item(text, at, f"knowledge/{n}.md", Layer.SEMANTIC) for n, text in enumerate(said)
    ]
    await service.start(["aria"])
    try:
        await service.index_items("aria", items)
        scope = RecallScope("aria", None, None, is_dm=False)
        every = len(items)
        asked_when = await service.search(scope, "When was the supplier deal done?", limit=every)
        asked_how = await service.search(scope, "How was the supplier deal done?", limit=every)
        dated = items[-1].id
        assert [r.id for r in asked_how][-1] == dated  # not asked when: last, as nothing lifts it
        rank = [r.id for r in asked_when].index(dated)
        assert rank <= len(items) - 5, [r.text for r in asked_when]  # past four that match words
        assert "says when" in asked_when[rank].why
    finally:
        await service.stop()


async def test_a_query_naming_someone_is_embedded_in_their_first_person(tmp_path: Path) -> None:
    """The name pulled every line that mentions the person above the one on topic (LoCoMo
    hybrid any@10 0.878 -> 0.893 as "they", 0.899 as "I"; bench/README.md)."""
    embedder = Recording()
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), embedder)
    service.names_in = Mentions([(("dana",), "Dana Scully")]).find
    await service.start(["aria"])
    await service.warmed()  # its "warm-up" query is embedded before, not between, these
    try:
        scope = RecallScope("aria", None, None, is_dm=False)
        await service.search(scope, "What did Dana Scully say about Dana's budget?")
        await service.prime(scope, "when is dana back?")
        assert embedder.asked[-2:] == [
            "What did I say about my budget?",
            "when is I back?",
        ]
    finally:
        await service.stop()


class Recording:
    """Remembers the queries it embedded."""

    model_id, dim = "recording", 4

    def __init__(self) -> None:
        self.asked: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


def memory_item(
    text: str, at: datetime, path: str, layer: Layer, person: str | None = None
) -> MemoryItem:
    return MemoryItem(str(uuid.uuid4()), layer, text, path, "shared", at, at, person=person)


class Apart:
    """What was "signed" points away from every query; all else points at it: only a
    retriever of its own (a person's words, a day's) lifts it over the others."""

    model_id, dim = "apart", 4

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]

    def embed_passages(self, texts: Sequence[str]) -> list[list[float]]:
        return [[0.0, 1.0, 0.0, 0.0] if "signed" in t else [1.0, 0.0, 0.0, 0.0] for t in texts]


async def test_a_search_naming_someone_finds_their_own_words_among_others(tmp_path: Path) -> None:
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), Apart())
    service.names_in = Mentions([(("dana",), "Dana"), (("bob",), "Bob")]).find
    at = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    said = [("bob", f"Dana's budget spreadsheet, budget tab {n}, budget total") for n in range(12)]
    said.append(("dana", "I signed off the budget yesterday"))
    items = [
        memory_item(text, at, f"knowledge/{n}.md", Layer.SEMANTIC, who)
        for n, (who, text) in enumerate(said)
    ]
    await service.start(["aria"])
    try:
        await service.index_items("aria", items)
        scope = RecallScope("aria", None, None, is_dm=False)
        found = await service.search(scope, "What did Dana say about the budget?", limit=3)
        danas = [r for r in found if r.id == items[-1].id]
        assert danas, [r.text for r in found]
        assert "person" in danas[0].why
        service.names_in = lambda text: Named((), text)  # nobody named: her words are not found
        found = await service.search(scope, "What did Dana say about the budget?", limit=3)
        assert items[-1].id not in [r.id for r in found]
    finally:
        await service.stop()
