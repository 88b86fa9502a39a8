"""Gitleaks' rule set, read from the vendored rules/gitleaks.toml and applied to chat text.

Why gitleaks: it is the most actively kept open rule set for credentials (200+ providers,
each rule with the provider's prefix or its name nearby, an entropy floor and allowlists
for the usual look-alikes), MIT licensed, and a plain data file, so the hub reads it with
Python's `re`, offline and in-process: no program to spawn per message. docs/memory.md
says what else was weighed. scripts/vendor/secret_rules.py refreshes the file from PyPI.

The rules are written for Go's RE2; `python_pattern` translates the few constructs Python
spells otherwise (flags switched on mid-pattern, `\\z`, POSIX classes). A rule applies as
gitleaks applies it: only when one of its keywords is in the text, its secret is its
`secretGroup` (else its first capture group), the secret's Shannon entropy must exceed the
rule's `entropy`, and the global and the rule's allowlists spare look-alikes. Rules that
only name file paths, or apply only to some paths, have nothing to look at in a chat and
are left out.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

RULES_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"
_GLOBAL_FLAGS = re.compile(r"\(\?([imsU-]+)\)")
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": r"\w",
    "space": r"\s",
}
_MIN_GROUP = 8  # a shorter first group is a fragment of the shape (`([a-z0-9]{4}-){3}`)
# Gitleaks ends most tokens where code ends one (a quote, a space, `;`, an escaped newline);
# in chat and in URLs a token also ends at a sentence's punctuation or the next parameter
# ("my key is AIza...).", "?key=AIza...&cb=init"). The value's own character class still
# decides what the token is; this only lets the match close there.
_GITLEAKS_END = r"""(?:[\x60'"\s;]|\\[nr]|$"""
_CHAT_END = r"""(?:[\x60'"\s;.,:!?)\]}>&|]|\\[nr]|$"""


def python_pattern(go: str) -> str:
    """`go` (RE2 syntax) as a Python pattern that matches the same text.

    RE2 lets `(?i)` switch a flag on for the rest of the group it stands in; Python takes
    such flags only at the start, so the rest of the group becomes a scoped `(?i:...)`
    (closed and opened again around each `|`, which keeps the alternation's scope).
    """
    out: list[str] = []
    scoped: list[list[str]] = [[]]  # per open group: the scoped flag groups opened in it
    i = 0
    while i < len(go):
        char = go[i]
        if char == "\\":
            out.append(r"\Z" if go[i + 1] == "z" else go[i : i + 2])
            i += 2
        elif char == "[":
            i = _char_class(go, i, out)
        elif char == "(" and (flags := _GLOBAL_FLAGS.match(go, i)):
            if i == 0:
                out.append(flags.group(0))
            else:
                out.append(f"(?{flags.group(1)}:")
                scoped[-1].append(flags.group(1))
            i = flags.end()
        elif char == "(":
            scoped.append([])
            out.append(char)
            i += 1
        elif char == ")":
            out.append(")" * len(scoped.pop()) + ")")
            i += 1
        elif char == "|":
            flags_here = scoped[-1]
            out.append(")" * len(flags_here) + "|" + "".join(f"(?{f}:" for f in flags_here))
            i += 1
        else:
            out.append(char)
            i += 1
    out.append(")" * len(scoped[0]))
    return "".join(out)


def _char_class(go: str, i: int, out: list[str]) -> int:
    """Copy the class starting at `go[i]` ('['); return the index after its ']'."""
    out.append("[")
    i += 1
    if go[i] == "^":
        out.append("^")
        i += 1
    if go[i] == "]":  # a ']' first is a literal
        out.append(r"\]")
        i += 1
    while go[i] != "]":
        if go[i] == "\\":
            out.append(go[i : i + 2])
            i += 2
        elif go.startswith("[:", i):
            end = go.index(":]", i)
            out.append(_POSIX[go[i + 2 : end]])
            i = end + 2
        elif go[i] in "[&~|":  # literal in RE2; Python warns of (future) set operations
            out.append("\\" + go[i])
            i += 1
        else:
            out.append(go[i])
            i += 1
    out.append("]")
    return i + 1


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


@dataclass(frozen=True, slots=True)
class Allowlist:
    """What spares a candidate: a regex on its secret, match or line, or a stopword in the
    secret; `require_all` when the rule says condition = "AND". A path condition never
    holds here (a chat message has no file path)."""

    target: str
    regexes: tuple[re.Pattern[str], ...]
    stopwords: tuple[str, ...]
    require_all: bool
    has_paths: bool

    def allows(self, secret: str, match: str, line: str) -> bool:
        checks: list[bool] = [False] if self.has_paths else []
        if self.regexes:
            subject = {"match": match, "line": line}.get(self.target, secret)
            checks.append(any(regex.search(subject) for regex in self.regexes))
        if self.stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in self.stopwords))
        return all(checks) if self.require_all else any(checks)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        """Where the secret is in `match`: gitleaks' choice of group, or the whole match
        when the first group is a fragment of the shape rather than the credential."""
        if self.secret_group:
            return match.span(self.secret_group)
        names = {index for index in self.pattern.groupindex.values()}
        for index in range(1, (self.pattern.groups or 0) + 1):
            if index not in names and match.group(index):
                start, end = match.span(index)
                return (start, end) if end - start >= _MIN_GROUP else match.span()
        return match.span()


@dataclass(frozen=True, slots=True)
class Finding:
    start: int
    end: int
    kind: str


class RuleSet:
    """The compiled rules, indexed by keyword so a message runs only the rules it may hit."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.rules = tuple(
            _rule(raw) for raw in config["rules"] if "regex" in raw and "path" not in raw
        )
        self.allowlist = _allowlist(config.get("allowlist", {}))
        # A generic rule's find is named only when no provider's rule saw the same secret.
        self.rules = tuple(sorted(self.rules, key=lambda rule: rule.id.startswith("generic")))
        self._always = tuple(rule for rule in self.rules if not rule.keywords)
        by_keyword: dict[str, list[int]] = {}
        for index, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                by_keyword.setdefault(keyword, []).append(index)
        # A keyword found stands for itself and every keyword that is a prefix of it (the
        # scan reports the longest keyword starting at each position).
        self._by_keyword = {
            keyword: tuple(
                sorted({i for k in by_keyword if keyword.startswith(k) for i in by_keyword[k]})
            )
            for keyword in by_keyword
        }
        self._keywords = re.compile(f"(?=({_trie(by_keyword)}))")

    def find(self, text: str) -> Iterator[Finding]:
        """Every secret the rules see in `text`, rule by rule in the file's order."""
        hit: set[int] = set()
        for keyword in set(self._keywords.findall(text.lower())):
            hit.update(self._by_keyword[keyword])
        for index in sorted(hit):
            yield from self._apply(self.rules[index], text)
        for rule in self._always:
            yield from self._apply(rule, text)

    def _apply(self, rule: Rule, text: str) -> Iterator[Finding]:
        for match in rule.pattern.finditer(text):
            start, end = rule.secret_span(match)
            secret = text[start:end]
            if not secret or (rule.entropy and shannon_entropy(secret) <= rule.entropy):
                continue
            # Gitleaks' own guard for its generic rules: a credential has a digit somewhere.
            if rule.id.startswith("generic") and not any(c.isdigit() for c in secret):
                continue
            line = _line(text, match.start(), match.end())
            allowlists = (self.allowlist, *rule.allowlists)
            if any(allow.allows(secret, match.group(0), line) for allow in allowlists):
                continue
            yield Finding(start, end, rule.id)


def _trie(words: Iterable[str]) -> str:
    """One pattern matching any of `words`, longest first, as a trie: a regex engine then
    looks at each position once instead of once per keyword (250 of them)."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def branch(node: dict[str, Any]) -> str:
        alternatives = [re.escape(char) + branch(node[char]) for char in sorted(node) if char]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return branch(tree)


def _line(text: str, start: int, end: int) -> str:
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : last if last >= 0 else len(text)]


def _rule(raw: dict[str, Any]) -> Rule:
    return Rule(
        id=raw["id"],
        pattern=re.compile(python_pattern(raw["regex"].replace(_GITLEAKS_END, _CHAT_END))),
        keywords=tuple(keyword.lower() for keyword in raw.get("keywords", ())),
        entropy=float(raw.get("entropy", 0.0)),
        secret_group=int(raw.get("secretGroup", 0)),
        allowlists=tuple(_allowlist(item) for item in raw.get("allowlists", ())),
    )


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    return Allowlist(
        target=raw.get("regexTarget", "secret"),
        regexes=tuple(re.compile(python_pattern(regex)) for regex in raw.get("regexes", ())),
        stopwords=tuple(word.lower() for word in raw.get("stopwords", ())),
        require_all=raw.get("condition", "OR").upper() == "AND",
        has_paths=bool(raw.get("paths")),
    )


@cache
def gitleaks() -> RuleSet:
    """The vendored rule set, compiled once per process."""
    return RuleSet(tomllib.loads(RULES_FILE.read_text(encoding="utf-8")))
