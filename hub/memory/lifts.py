"""Recall's lifts after the engine's fusion: what a query asks beyond its words (the people and
the time it names, whether it asks when) and where a hit sits (the sections before and near it)
reorder the fused candidates, each by a bounded share of a score, so relevance still leads.

In order (`lifted`): the section before each hit, what the named people said, what lies within
the named time, what says when if asked when, then the sections near the best hits. Each
weight below was measured on LoCoMo (`bench/README.md`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hub.memory.dates import Span, tells_when
from hub.memory.index import Hit, MemoryFilter, admits
from hub.memory.lexical import tokenize

# A hit lifts the section before it by this share of its score: an episode's vector is made
# with its earlier sections (hub/memory/context.py), so it often matches because of what
# the one before said ("Yes, last Saturday!" after the question it answers, or a reply that
# repeats the news it answers). On LoCoMo, with the people retriever, hybrid any@10 rose
# 0.817 → 0.828 at 0.5 (0.820 at 0.35, 0.824 at 0.7; bench/README.md). Only a reply lifts:
# a line by the same person as the section before it does not (`answers`).
PREVIOUS_WEIGHT = 0.5
# ...but when the hit's own words match the query (as many of its terms as the section's,
# and some), its match is its own, not its context's: the lift then takes the section to just
# below the hit, never past. Two statements in a row ("Our office door code is 7720." and,
# from someone else, "The garage door code is 3141.") would otherwise put the first above
# the second when asked about the garage. Capping every lift cost LoCoMo any@10 0.877 ->
# 0.868 (bench/README.md).
PREVIOUS_CAP = 0.999
# A hit said by a person the query names gains this share of the best hit's score: asked
# about Caroline, her own words answer more often than others' mentions of her (on LoCoMo,
# 95 % of such questions' evidence is the named speaker's). Hybrid any@10 0.837 → 0.850 in
# bench/fusion_study.py's data, every conversation up or level for 0.1-0.3; 0.5 lost.
SPEAKER_WEIGHT = 0.3
# Each of the best NEIGHBOUR_LIFTERS hits lifts the sections within NEIGHBOUR_REACH of it in
# its conversation (the `prev` chain) by this share of its score, a section taking its best
# neighbour's lift, not the sum of them all (session 26): what answers a question
# sits in a few nearby turns. On LoCoMo with the date lift below (recall_locomo.py), 0.05 gave
# hybrid any/all@10 0.874 / 0.747 and 0.1 gave 0.869 / 0.745 with multi-hop any@10 0.779 vs
# 0.761; a reach of one section gained nothing in fusion_study.py's data (the
# previous-section lift has it).
NEIGHBOUR_WEIGHT = 0.05
NEIGHBOUR_REACH = 2
NEIGHBOUR_LIFTERS = 20
# A query naming a span of time ("on 1 February, 2023", "last Saturday"; hub/memory/dates.py)
# lifts what was said within it by this share of the best hit's score, as it searches that
# span as well (VectorIndex.query). On LoCoMo 149 of 1,226 questions name one, and 84 % of
# those have an evidence turn within it; in fusion_study.py's data the lift took their any@10
# 0.745 -> 0.826 (0.3 and up alike; 0.1 gave 0.792), hybrid any@10 overall +1.0 point.
WITHIN_WEIGHT = 0.3
# A question asking when ("When did Caroline go to the support group?") lifts what says when
# (hub/memory/dates.py `tells_when`) by this share of the best hit's score: the answer is a
# time. On LoCoMo 214 of 1,226 questions ask when; in the engine (recall_locomo.py) hybrid
# any/all@10 rose 0.874 / 0.747 -> 0.877 / 0.750 at 0.3 (0.876 / 0.749 at 0.5), temporal any@10
# 0.863 -> 0.875, and fusion_study.py's data had every conversation up or level. A larger
# share also lifts any dated line of a small memory over the one that matched.
WHEN_WEIGHT = 0.3

Payloads = Callable[[list[str]], dict[str, dict[str, object]]]


def lift_previous(
    hits: list[Hit], flt: MemoryFilter, fetch: Payloads, terms: frozenset[str] = frozenset()
) -> list[Hit]:
    """The hits, each section before one (payload "prev") that it may answer (`answers`)
    lifted by PREVIOUS_WEIGHT × that hit's score, best first; one that was no hit is fetched
    and joins if the filter admits it. A section stays below a hit that lifts it when that
    hit's own words share as many of the query's `terms` as the section's do, and some
    (`_SharedTerms.holds_below`)."""
    known = {hit.id: hit for hit in hits}
    wanted = [p for h in hits if isinstance(p := h.payload.get("prev"), str) and p not in known]
    fetched = fetch(list(dict.fromkeys(wanted))) if wanted else {}
    sections = known | {i: Hit(i, 0.0, p) for i, p in fetched.items() if admits(flt, p)}
    lifts: dict[str, float] = {}
    lifters: dict[str, list[Hit]] = {}
    for hit in hits:
        prev = hit.payload.get("prev")
        section = sections.get(prev) if isinstance(prev, str) else None
        if section is not None and answers(hit, section):
            lifts[section.id] = lifts.get(section.id, 0.0) + PREVIOUS_WEIGHT * hit.score
            lifters.setdefault(section.id, []).append(hit)
    shared = _SharedTerms(terms)
    lifted = []
    for h in sections.values():
        if h.id not in known and h.id not in lifts:
            continue
        score = h.score + lifts.get(h.id, 0.0)
        for lifter in lifters.get(h.id, ()):
            if h.score < lifter.score <= score and shared.holds_below(lifter, h):
                score = min(score, PREVIOUS_CAP * lifter.score)
        lifted.append(Hit(h.id, score, h.payload))
    return sorted(lifted, key=lambda h: h.score, reverse=True)


def answers(line: Hit, section: Hit) -> bool:
    """Whether `line` may be a reply to the section before it, and so lift it: not when the
    same person said both. In a direct conversation every section is that person's message
    with the Anima's answer, and each stands on its own; in a six-line memory, lifts between
    them outweighed what matched (bench/README.md, session 26). Unknown speakers may."""
    said, before = line.payload.get("person"), section.payload.get("person")
    return not said or not before or said != before


class _SharedTerms:
    """How many of the query's terms a hit's own text holds, counted only for the few hits a
    lift would put past their lifter (tokenizing costs ~0.07 ms a LoCoMo turn)."""

    def __init__(self, terms: frozenset[str]) -> None:
        self.terms = terms
        self._count: dict[str, int] = {}

    def of(self, hit: Hit) -> int:
        if hit.id not in self._count:
            text = hit.payload.get("text")
            words = set(tokenize(text)) if isinstance(text, str) else set()
            self._count[hit.id] = len(self.terms & words)
        return self._count[hit.id]

    def holds_below(self, lifter: Hit, section: Hit) -> bool:
        """Whether the lifter matched by its own words, at least as well as the section did:
        then its match is its own, not its context's, and it stays first."""
        own = self.of(lifter)
        return own > 0 and own >= self.of(section)


def lift_speakers(hits: list[Hit], people: tuple[str, ...]) -> list[Hit]:
    """The hits, those said by one of `people` lifted by SPEAKER_WEIGHT × the best score,
    best first."""
    if not people:
        return hits
    return _lift_matching(hits, SPEAKER_WEIGHT, lambda h: h.payload.get("person") in people)


def lift_within(hits: list[Hit], span: Span | None) -> list[Hit]:
    """The hits, those from within the span of time the query names lifted by WITHIN_WEIGHT ×
    the best score, best first."""
    if span is None:
        return hits
    return _lift_matching(hits, WITHIN_WEIGHT, lambda h: in_span(h, span))


def lift_when(hits: list[Hit], asks_when: bool) -> list[Hit]:
    """The hits, those that say when (`tells_when`) lifted by WHEN_WEIGHT × the best score
    if the query asks when, best first."""
    if not asks_when:
        return hits
    return _lift_matching(hits, WHEN_WEIGHT, says_when)


def says_when(hit: Hit) -> bool:
    text = hit.payload.get("text")
    return isinstance(text, str) and tells_when(text)


def in_span(hit: Hit, span: Span) -> bool:
    ts = hit.payload.get("ts", 0.0)
    return isinstance(ts, int | float) and span[0].timestamp() <= ts < span[1].timestamp()


def _lift_matching(hits: list[Hit], weight: float, matches: Callable[[Hit], bool]) -> list[Hit]:
    if not hits:
        return hits
    bonus = weight * max(h.score for h in hits)
    lifted = [Hit(h.id, h.score + bonus, h.payload) if matches(h) else h for h in hits]
    return sorted(lifted, key=lambda h: h.score, reverse=True)


def lift_neighbours(hits: list[Hit]) -> list[Hit]:
    """The hits (given best first), each lifted by NEIGHBOUR_WEIGHT × the score of the best
    of the best NEIGHBOUR_LIFTERS within NEIGHBOUR_REACH sections of it, as far as the hits'
    `prev` links tell; best first. The best one, not a sum: in a small memory every section is
    near every other, and a sum put the middle of a conversation above its newest line."""
    prev = {h.id: p for h in hits if isinstance(p := h.payload.get("prev"), str)}
    lifters = {h.id: h.score for h in hits[:NEIGHBOUR_LIFTERS]}
    lifts: dict[str, float] = {}
    for hit in hits:
        earlier = hit.id
        for _step in range(NEIGHBOUR_REACH):
            if earlier not in prev:
                break
            earlier = prev[earlier]
            for lifted, lifter in ((hit.id, earlier), (earlier, hit.id)):
                if lifter in lifters:
                    lift = NEIGHBOUR_WEIGHT * lifters[lifter]
                    lifts[lifted] = max(lifts.get(lifted, 0.0), lift)
    lifted_hits = [Hit(h.id, h.score + lifts.get(h.id, 0.0), h.payload) for h in hits]
    return sorted(lifted_hits, key=lambda h: h.score, reverse=True)


@dataclass(frozen=True, slots=True)
class Asked:
    """What a query asks beyond its words: the people it names (ids), the span of time it
    names, whether it asks when, and its search terms."""

    people: tuple[str, ...] = ()
    span: Span | None = None
    when: bool = False
    terms: frozenset[str] = frozenset()  # its search terms (hub/memory/lexical.py)


def lifted(hits: list[Hit], asked: Asked, flt: MemoryFilter, fetch: Payloads) -> list[Hit]:
    """The fused hits after every lift, best first."""
    hits = lift_previous(hits, flt, fetch, asked.terms)
    hits = lift_within(lift_speakers(hits, asked.people), asked.span)
    return lift_neighbours(lift_when(hits, asked.when))


def lift_signals(fused: list[Hit], final: list[Hit], asked: Asked) -> dict[str, set[str]]:
    """Why hits were lifted, as explain codes: `neighbour` for the section before a fused hit
    that answers it (the one after it matched), `when` within the named time, `says when`
    asked when."""
    signals: dict[str, set[str]] = {}
    sections = {hit.id: hit for hit in final}
    for hit in fused:
        prev = hit.payload.get("prev")
        if isinstance(prev, str) and prev in sections and answers(hit, sections[prev]):
            signals.setdefault(prev, set()).add("neighbour")
    for hit in final:
        if asked.span is not None and in_span(hit, asked.span):
            signals.setdefault(hit.id, set()).add("when")
        if asked.when and says_when(hit):
            signals.setdefault(hit.id, set()).add("says when")
    return signals
