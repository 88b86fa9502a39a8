"""Why a search result matched, in words: what the API, the dashboard and the CLI show
beside it.

Recall knows which retrievers found a result (`Recalled.why`: `dense`, `lexical`, `person`
for the retrievers run again over what the people a query names said, `neighbour` for a
section lifted because the one after it matched) and what lifted it (`recent`,
`important`, `when` for what lies within a time the query names, `says when` for what says
when, asked when); a profile fact is `profile`. This says so for a person reading, and names
the words a result shares with the query, as the lexical index sees words (stemmed,
case-folded: "meetings" matches "meeting"), whether or not the lexical retriever's own list
reached it. Words that only frame a question ("How do I…") are named only for a lexical
match that shares nothing else: they match, but say nothing of why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hub.memory.lexical import CJK_RUN, frames_question, tokenize

_WORD = re.compile(r"\S+")
_EDGES = "\"'`.,;:!?()[]{}<>“”‘’«»「」『』。、？！"
MAX_WORDS = 6


def shared_words(query: str, text: str) -> tuple[list[str], list[str]]:
    """The query's words, as written, that share a search term with `text`: those that
    carry meaning, and those that only frame a question."""
    terms = set(tokenize(text))
    words: dict[str, str] = {}
    for raw in _WORD.findall(CJK_RUN.sub(lambda run: _spans(run[0], text), query)):
        word = raw.strip(_EDGES)
        if word and word.casefold() not in words and set(tokenize(word)) & terms:
            words[word.casefold()] = word
    framing = [w for w in words.values() if all(map(frames_question, tokenize(w)))]
    return [w for w in words.values() if w not in framing], framing


def _spans(run: str, text: str) -> str:
    """A run of CJK query text as its longest pieces that `text` holds too, apart: the
    lexical index matches such text by pairs of characters, so 「大阪出張はいつ」 shares
    「大阪」 and 「出張」 with 「大阪へ出張します」, not itself."""
    pieces, at = [], 0
    while at < len(run):
        end = at + 1
        while end < len(run) and run[at : end + 1] in text:
            end += 1
        pieces.append(run[at:end])
        at = end
    return " ".join(pieces)


def why(signals: Sequence[str], query: str, text: str, person: str | None = None) -> str:
    """A short sentence: why this text answered the query. `person` is the display name of
    whoever said it (an episode) or whom it is about (a profile fact), if known."""
    parts: list[str] = []
    if "profile" in signals:
        parts.append(f"what Animas learned about {person or 'this person'}")
    meaningful, framing = shared_words(query, text)
    # Shared words that carry meaning are named whether or not the lexical retriever's own
    # list reached the result: that list's length follows the search's limit.
    if "lexical" in signals or meaningful:
        words = (meaningful or framing)[:MAX_WORDS]
        quoted = ", ".join(f'"{w}"' for w in words)
        parts.append(f"shares the words {quoted}" if words else "shares search terms")
    if "dense" in signals:
        parts.append("close in meaning")
    if "person" in signals:
        who = person or "someone"
        parts.append(f"said by {who}, whom the query names")
    if "neighbour" in signals:
        parts.append("the section after it matched")
    if not parts:  # the fused ranking reaches past each retriever's own top list
        parts.append("ranked high by dense and lexical search together")
    if "when" in signals:
        parts.append("from the time asked about")
    if "says when" in signals:
        parts.append("says when, as asked")
    if "recent" in signals:
        parts.append("recent")
    if "important" in signals:
        parts.append("marked important")
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:]
