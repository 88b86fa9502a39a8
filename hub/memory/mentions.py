"""Which people a text names: display names and first names, as whole words.

Recall uses it to search what a named person said as a retriever of its own ("What did
Caroline research?" is mostly answered by Caroline's own words; bench/README.md), and embeds
the query with each name in the first person ("What did I research?"): the people retriever
finds whose words, the name no longer pulls every line that mentions them above the one on
topic, and the question reads as the person's own words do ("I researched adoption agencies").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

MIN_FIRST_NAME = 3  # "Al" in "Al Smith" would match too many words
MIN_CJK_FIRST_NAME = 2  # 佐藤 of 佐藤 陽翔: two characters are a whole name
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True, slots=True)
class Named:
    """Who a text names, and the text as a query's embedding reads it: each name in Latin
    script as "I" ("Caroline's" as "my"), as the person speaks of themselves. Grammar is not
    mended ("What does I like?"): the embedder reads past it, and mending measured no
    better. Names in Chinese, Japanese or Korean stay: nothing was measured on them."""

    people: tuple[str, ...]
    unnamed: str


class Mentions:
    """People by the names a text may call them: `people` is (person ids, display name),
    the ids being a person's own and those merged into it."""

    def __init__(self, people: Iterable[tuple[tuple[str, ...], str]]) -> None:
        # A first name two people share names both: the retriever it feeds is a union.
        names: dict[str, set[str]] = {}
        for ids, display in people:
            full = " ".join(_fold(display).split())
            if not full or not ids:
                continue
            names.setdefault(full, set()).update(ids)
            first = full.split()[0]
            shortest = MIN_CJK_FIRST_NAME if _CJK.search(first) else MIN_FIRST_NAME
            if first != full and len(first) >= shortest:
                names.setdefault(first, set()).update(ids)
        self._ids = {name: tuple(sorted(ids)) for name, ids in names.items()}
        # Longest first, so "Sam Lee" wins over "Sam"; CJK names have no word boundaries.
        longest_first = sorted(self._ids, key=len, reverse=True)
        alternatives = [
            re.escape(name) if _CJK.search(name) else rf"(?<!\w){re.escape(name)}(?!\w)"
            for name in longest_first
        ]
        self._pattern = re.compile("|".join(alternatives)) if alternatives else None
        # The same names in the text as written (case aside), to be said as pronouns.
        latin = [re.escape(name) for name in longest_first if not _CJK.search(name)]
        self._latin = (
            re.compile(rf"(?<!\w)(?:{'|'.join(latin)})(?:['’]s)?(?!\w)", re.IGNORECASE)
            if latin
            else None
        )

    def named_in(self, text: str) -> tuple[str, ...]:
        """The ids of everyone `text` names, sorted; () if nobody."""
        if self._pattern is None:
            return ()
        found: set[str] = set()
        for match in self._pattern.finditer(_fold(text)):
            found.update(self._ids[match.group()])
        return tuple(sorted(found))

    def find(self, text: str) -> Named:
        """Who `text` names, and `text` with their names as "I" / "my"."""
        people = self.named_in(text)
        if not people or self._latin is None:
            return Named(people, text)
        return Named(people, self._latin.sub(_pronoun, text))


def _pronoun(name: re.Match[str]) -> str:
    return "my" if name.group().endswith(("'s", "’s")) else "I"
