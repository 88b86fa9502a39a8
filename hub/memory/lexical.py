"""The lexical half of hybrid recall: text to sparse vectors for Qdrant's IDF-modified index.

Dense embeddings miss exact strings: a room number, an error code, `API_KEY_2`, a
version. Qdrant Edge's built-in BM25 tokenizer is no help either: on this machine it
dropped numbers ("room 7731 code" became two tokens) and found nothing in common
between "東京 会議" and "会議は東京で行います", because it splits on spaces and CJK text
has none. So we tokenize ourselves and hand Qdrant term weights; the collection's
`Modifier.IDF` supplies the IDF, computed over the whole collection at query time.

Libraries considered: fastembed's `Bm25` (installed) has the same number-dropping,
space-splitting tokenizer; the `regex` module (installed only through tiktoken, without
type information) would give `\\p{Han}`, but the stdlib `re` with explicit ranges does
the job without an undeclared dependency. Stemming uses py_rust_stemmers (Qdrant's
maintained Snowball binding, which fastembed requires). It is imported outright, with
no stemmer-less fallback: a machine that silently skipped stemming would write
tokens that never match those of one that stems.

Changing anything here changes token ids, so stored vectors must be rebuilt: bump
`LEXICAL_VERSION` so the index can tell.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

from py_rust_stemmers import SnowballStemmer  # type: ignore[import-untyped]

LEXICAL_VERSION = 1
# BM25 constants, the usual defaults (also fastembed's). AVG_DOC_TOKENS is a fixed
# guess at a memory chunk's token count (identifiers and URLs expand into several
# tokens), so a document's vector never depends on the rest of the collection.
K1 = 1.2
B = 0.75
AVG_DOC_TOKENS = 256.0
MAX_TOKEN_CHARS = 128  # longer runs are blobs (base64, minified data), not search terms

ENGLISH_STOPWORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "had", "has"}
    | {"have", "he", "her", "his", "i", "if", "in", "into", "is", "it", "its", "me", "my"}
    | {"of", "on", "or", "our", "s", "she", "so", "t", "than", "that", "the", "their", "them"}
    | {"then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when"}
    | {"which", "who", "will", "with", "you", "your"}
)

# Terms (as `tokenize` gives them, stemmed) that frame a question rather than name its
# subject: "what did you say about X?", "how do I…". The index keeps them; what explains a
# match or judges it relevant (offline answers, memory search's "why") looks past them.
QUESTION_TERMS = frozenset(
    {"about", "anyth", "ask", "can", "could", "did", "do", "doe", "know", "rememb", "say"}
    | {"said", "someth", "tell", "told", "would", "should", "pleas", "hi", "hello", "thank"}
    | {"how", "where", "whi", "wonder", "mention", "recal", "ever", "again", "yet", "just"}
)
# A CJK pair of grammar alone (です, 什么, 我们) says no more than "how" does.
_HIRAGANA = range(0x3041, 0x30A0)
_GRAMMAR_CHARS = frozenset("私僕何的了是在吗呢吧么什哪里怎我你他她它们这那有和也都就不")

_STEMMER = SnowballStemmer("english")


def _mark_ranges() -> str:
    """Every combining mark (Unicode category M*) as a character-class body.

    Python's `\\w` omits marks, which would cut Devanagari, Thai or Arabic words at
    each vowel sign. Nothing above U+1FFFF is a mark except variation selectors,
    which `_IGNORED` strips first.
    """
    ranges: list[str] = []
    start: int | None = None
    for cp in range(0x20001):  # one past the end, so a range open at U+1FFFF closes
        is_mark = cp < 0x20000 and unicodedata.category(chr(cp)).startswith("M")
        if is_mark and start is None:
            start = cp
        elif not is_mark and start is not None:
            ranges.append(f"{chr(start)}-{chr(cp - 1)}")
            start = None
    return "".join(ranges)


# Han (with its iteration marks), Hiragana, Katakana (without the ・ separator) and
# Hangul: scripts written without spaces between words, so they get bigrams.
_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\U00020000-\U0003134f"
)
CJK_RUN = re.compile(f"[{_CJK}]+")  # text written without spaces, searched by bigrams
_WORD = f"(?:[^\\W{_CJK}]|[{_mark_ranges()}])"  # a letter, digit, _ or mark, not CJK
_JOINER = r"[-.@/\\:?=&#+~%]"  # inside identifiers, paths, URLs, emails, versions
_SEGMENT = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<word>#?{_WORD}+(?:{_JOINER}+{_WORD}+)*)")
# Soft hyphen, zero-width (non-)joiners, word joiner, BOM and variation selectors:
# invisible characters that would otherwise split a word or a CJK run.
_IGNORED = re.compile("[\u00ad\u200c\u200d\u2060\ufeff\ufe00-\ufe0f\U000e0100-\U000e01ef]")
_THOUSANDS = re.compile(r"(?<![\d,])\d{1,3}(?:,\d{3})+(?![\d,])")
# Split levels, coarsest first: URL/path/email parts, then snake/kebab, then dots.
_LEVELS = (re.compile(r"[/\\:@?=&#+~%]+"), re.compile(r"[-_]+"), re.compile(r"\.+"))
_VERSION = re.compile(r"([^\W\d_]*)(\d+(?:\.\d+)+)")  # v2.1.0, 3.14, python3.11
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_DIGITS_OR_NOT = re.compile(r"\d+|\D+")


def tokenize(text: str) -> list[str]:
    """Search terms of `text`, in order, repeats kept (term frequency counts them).

    NFKC folds full-width and compatibility forms (`ＡＰＩ７７３１` is `API7731`);
    case folding makes matching case-insensitive. Compounds such as `API_KEY_2`,
    `user@example.com` or a URL yield the whole and their parts, so both an exact
    and a partial mention match, and an exact one scores higher.
    """
    text = unicodedata.normalize("NFKC", text)
    text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), _IGNORED.sub("", text))
    tokens: list[str] = []
    for match in _SEGMENT.finditer(text):
        cjk = match.group("cjk")
        if cjk:
            tokens.extend(t for t in _cjk_grams(cjk) if len(t) <= MAX_TOKEN_CHARS)
        else:
            tokens.extend(_word_tokens(match.group("word")))
    return tokens


@lru_cache(maxsize=65536)
def _word_tokens(word: str) -> tuple[str, ...]:
    """One space-free run's tokens, without repeats. Cached: words recur (Zipf), and
    recall's lifts tokenize a few stored sections on every search."""
    return tuple(t for t in dict.fromkeys(_compound(word)) if len(t) <= MAX_TOKEN_CHARS)


def _cjk_grams(run: str) -> list[str]:
    """Overlapping character bigrams, or the character itself for a one-character run.

    Without a dictionary there are no word boundaries in 会議は東京で行います; bigrams
    still make 東京 and 会議 match inside it (the scheme of Lucene's CJKBigramFilter).
    """
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _compound(word: str) -> Iterator[str]:
    """The tokens of one space-free run: the whole, then its parts at each split level.

    The caller drops repeats, so `3.14` counts once although two rules yield it.
    """
    if word.startswith("#") and len(word) > 1:
        yield word.casefold()  # "#1234": an issue or channel reference as written
    yield from _pieces(word.lstrip("#"), 0)


def _pieces(piece: str, level: int) -> Iterator[str]:
    """Split `piece` at `_LEVELS[level]`, yielding each joined form that has parts."""
    if level == len(_LEVELS):
        yield from _words(piece)
        return
    subs = [sub for sub in _LEVELS[level].split(piece) if sub]
    if len(subs) > 1:
        yield piece.casefold()
    for sub in subs:
        version = _VERSION.fullmatch(sub)
        if version:
            yield sub.casefold()
            yield from _version_parts(version.group(1).casefold(), version.group(2))
        else:
            yield from _pieces(sub, level + 1)


def _version_parts(prefix: str, number: str) -> Iterator[str]:
    """`v2.1.0` also matches `2.1.0`, `2.1` and `v2`; `3.14` stays one number.

    Dotted numbers are not cut into their components: "1" and "0" would match
    every other number in memory.
    """
    components = number.split(".")
    for n in range(len(components), 1, -1):
        yield ".".join(components[:n])
    if prefix:
        yield prefix + components[0]
        if len(prefix) > 1:
            yield prefix  # "python" from "python3.11"


def _words(piece: str) -> Iterator[str]:
    """A word; `getUserName`, `HTTPServer` or `sha256` also yield their subwords.

    Single letters cut off by a split ("i" of iPhone) are noise and are dropped.
    """
    parts = _subwords(piece)
    if len(parts) < 2:
        yield from _term(piece)
        return
    yield piece.casefold()
    for part in parts:
        if len(part) > 1 or part.isdigit():
            yield from _term(part)


def _subwords(piece: str) -> list[str]:
    """CamelCase humps for ASCII identifiers, else letter and digit runs ("room7731")."""
    if piece.isascii() and _CAMEL_HUMP.search(piece):
        return list(_CAMEL_PART.findall(piece))
    return _DIGITS_OR_NOT.findall(piece)


def _term(word: str) -> Iterator[str]:
    """The indexed form of a plain word: English stopwords dropped, English stemmed."""
    folded = word.casefold()
    if folded in ENGLISH_STOPWORDS:
        return
    yield _stem(folded) if folded.isascii() and folded.isalpha() else folded


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """Snowball English stem ("meetings" → "meet"); non-ASCII words are left alone."""
    stem: str = _STEMMER.stem_word(word)
    return stem or word


@lru_cache(maxsize=65536)
def token_id(token: str) -> int:
    """A token's sparse index: 32 bits of BLAKE2b, identical in every process.

    Python's `hash()` is salted per process and would scatter one word across ids.
    Qdrant's sparse indices are unsigned 32-bit, so the full range is used; two
    tokens sharing an id (rare) simply count as one term.
    """
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big")  # 4 bytes: already 0 <= id < 2**32


def _id_counts(text: str) -> Counter[int]:
    """Term frequencies by token id; colliding tokens merge before saturation."""
    counts: Counter[int] = Counter()
    for token, n in Counter(tokenize(text)).items():
        counts[token_id(token)] += n
    return counts


def sparse_vector(text: str) -> tuple[list[int], list[float]]:
    """A document's sparse vector: sorted unique ids and BM25 term weights.

    weight = tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / AVG_DOC_TOKENS)),
    so repeats saturate and long documents do not win by sheer length. The IDF
    factor is left to Qdrant's IDF modifier.
    """
    counts = _id_counts(text)
    length = sum(counts.values())
    norm = K1 * (1.0 - B + B * length / AVG_DOC_TOKENS)
    indices = sorted(counts)
    return indices, [counts[i] * (K1 + 1.0) / (counts[i] + norm) for i in indices]


def query_vector(text: str) -> tuple[list[int], list[float]]:
    """A query's sparse vector: each distinct token weighs 1.0.

    Binary, as in fastembed's `Bm25.query_embed`: the score is then the classic BM25
    sum of IDF times the document's weight over the query's terms, and repeating a
    word in a query does not skew it.
    """
    indices = sorted(_id_counts(text))
    return indices, [1.0] * len(indices)


def frames_question(term: str) -> bool:
    """Whether a search term only frames a question: `QUESTION_TERMS`, or CJK grammar."""
    return term in QUESTION_TERMS or all(ord(c) in _HIRAGANA or c in _GRAMMAR_CHARS for c in term)
