"""Interpersonal memory: what Animas learn about a person, in shared/users/<person>.md.

Facts go under the profile's "What Animas have learned" heading as bullets, each with who
learned it and when, and "in a DM" when it was learned in a direct conversation: such a fact
is recalled only in that person's DMs (with any Anima, on any platform), never in a channel,
where others hear the reply (DESIGN §7.4). Unmarked lines (hand-written, or older) count as
shared. The front matter (identities, roles) belongs to hub/identity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from hub.markdown_files import read_document, write_document
from hub.memory.lexical import tokenize
from hub.plaintext import one_line
from hub.redaction.redact import REDACTED_MARK, redact

LEARNED = "## What Animas have learned"
IN_DM = ", in a DM)_"  # how a bullet learned in a DM ends
# The heading as a line of its own: a name or fact that holds its words is not it.
_LEARNED_LINE = re.compile(rf"^{re.escape(LEARNED)}[ \t]*$", re.MULTILINE)
_MARKED = re.compile(
    r"^(?P<fact>.*?) _\((?P<anima>[^,()]+), (?P<day>\d{4}-\d{2}-\d{2})(?P<dm>, in a DM)?\)_$"
)
# First-person statements worth keeping when no language model is there to judge.
_SELF_STATEMENT = re.compile(
    r"(?:^|(?<=[.!?]\s))((?:I am|I'm|I work|I live|I like|I love|I prefer|I hate|I don't like|"
    r"I use|my name is|call me|my (?:\w+ ){0,2}(?:is|are))\b[^.!?\n]{3,200})",
    re.IGNORECASE,
)


# The same in Japanese and Chinese, which need no space after a sentence: 「私はお茶が好きです」,
# 「私の名前は健二です」, 「我喜欢喝茶」, 「我住在北京」.
_CJK_SELF_STATEMENT = re.compile(
    r"(?:^|(?<=[。！？!?.]))\s*(?![^。！？\n]*[？?])"  # a sentence that is not a question
    r"((?:私|僕|わたし)(?:は|の[^。！？\n]{1,12}は)[^。！？\n]{1,100}?"
    r"(?:好き|嫌い|苦手|住んで|働いて|勤めて|使って|です)[^。！？\n]{0,12}"
    r"|我(?:喜欢|爱|不喜欢|讨厌|住在|在|是|叫|用|的[^。！？\n]{1,12}是)[^。！？\n]{2,100})",
)


# Where a statement's clauses part: "I prefer tea, and my PIN is …", "…; my PIN is …".
_CLAUSES = re.compile(r",\s*(?:and\s+|but\s+)?|;\s*|，|、")


def self_statements(text: str) -> list[str]:
    """Sentences in which a person says something about themselves (`text` redacted), less
    the clauses that held a secret: "my PIN is [REDACTED:password]" tells an Anima nothing
    about the person, so "I prefer tea, and my PIN is …" is kept as "I prefer tea"."""
    found = [m.group(1).strip() for m in _SELF_STATEMENT.finditer(text)]
    found += [m.group(1).strip() for m in _CJK_SELF_STATEMENT.finditer(text)]
    kept = []
    for statement in found:
        if REDACTED_MARK in statement:
            clauses = [c.strip() for c in _CLAUSES.split(statement)]
            statement = ", ".join(c for c in clauses if c and REDACTED_MARK not in c)
            if not _SELF_STATEMENT.fullmatch(statement) and not _CJK_SELF_STATEMENT.match(
                statement
            ):
                continue  # what is left says nothing of the person either
        kept.append(statement)
    return kept


@dataclass(frozen=True, slots=True)
class Learned:
    """One learned fact, as a person reads it ("About me"): who learned it, when, where."""

    fact: str
    anima: str = ""  # "": written by hand
    day: str = ""
    in_dm: bool = False

    @classmethod
    def parse(cls, line: str) -> Learned:
        marked = _MARKED.match(line)
        if marked is None:
            return cls(line)
        return cls(marked["fact"], marked["anima"], marked["day"], marked["dm"] is not None)


def heading(name: str) -> str:
    """A profile's title line: the person's display name, on one line whatever it holds."""
    return f"# {one_line(name)}"


def _split_learned(body: str) -> tuple[str, str] | None:
    """A profile's body before its "What Animas have learned" heading line and after it;
    None without one."""
    found = _LEARNED_LINE.search(body)
    return None if found is None else (body[: found.start()], body[found.end() :])


class Profiles:
    def __init__(self, users_dir: Path) -> None:
        self._dir = users_dir

    def learned(self, person_id: str, *, in_dm: bool = True) -> list[str]:
        """The facts, as written; outside a DM (`in_dm=False`) without those learned in one."""
        path = self._dir / f"{person_id}.md"
        if not path.exists():
            return []
        _meta, body = read_document(path)
        parts = _split_learned(body)
        section = parts[1] if parts else ""
        facts = [ln[2:].strip() for ln in section.splitlines() if ln.startswith("- ")]
        return facts if in_dm else [f for f in facts if not f.endswith(IN_DM)]

    def search(
        self, query: str, people: Sequence[str] | None, *, in_dm: bool, limit: int
    ) -> list[tuple[str, Learned, float]]:
        """What the Animas learned about people (shared by all of them) matching the
        query's words: (person id, fact, share of the query's words it holds), best first.
        `people`: only these persons (None: everyone); `in_dm=False`: not facts learned in
        a DM."""
        terms = set(tokenize(query))
        found: list[tuple[str, Learned, float]] = []
        for path in sorted(self._dir.glob("*.md")):
            person = path.stem
            if not terms or (people is not None and person not in people):
                continue
            for line in self.learned(person, in_dm=in_dm):
                fact = Learned.parse(line)
                shared = terms & set(tokenize(fact.fact))
                if shared:
                    found.append((person, fact, len(shared) / len(terms)))
        found.sort(key=lambda hit: -hit[2])
        return found[:limit]

    def add(self, person_id: str, fact: str, anima: str, day: date, *, private: bool) -> bool:
        """Append one fact (secrets redacted); False if it was already there or no profile.
        `private`: learned in a DM with the person, so kept to their DMs."""
        path = self._dir / f"{person_id}.md"
        if not path.exists():
            return False
        clean = one_line(redact(fact)[0])  # a bullet is one line: a fact never makes two
        meta, body = read_document(path)
        if any(line.startswith(clean) for line in self.learned(person_id)):
            return False
        if _split_learned(body) is None:
            body = body.rstrip() + f"\n\n{LEARNED}\n"
        where = IN_DM if private else ")_"
        body = body.rstrip() + f"\n- {clean} _({anima}, {day.isoformat()}{where}\n"
        write_document(path, meta, body)
        return True

    def forget_learned(self, person_id: str) -> int:
        """Delete every fact the Animas learned about the person (their profile keeps who
        they are: names, accounts, roles); how many went."""
        path = self._dir / f"{person_id}.md"
        if not path.exists():
            return 0
        meta, body = read_document(path)
        parts = _split_learned(body)
        if parts is None:
            return 0
        before, section = parts
        facts = [ln for ln in section.splitlines() if ln.startswith("- ")]
        if not facts:
            return 0
        rest = [ln for ln in section.splitlines() if not ln.startswith("- ")]
        write_document(path, meta, before + LEARNED + "\n".join(rest).rstrip() + "\n")
        return len(facts)
