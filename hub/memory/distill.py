"""Distillers: what turns conversations into summaries, knowledge and procedures.

The `Distiller` protocol, and `OfflineDistiller`: deterministic rules, no model needed.
`hub/schedule/distill_llm.py` has the language-model implementation, which falls back to these
rules call by call.

Offline rules, in short (docs/memory.md has the full list):

- a session or an old day is summarized extractively: each person's line, cut to its first
  sentences; lines with `[IMPORTANT]` are kept whole;
- knowledge comes from what people (never the Anima itself) state: "X is/are/was/moved to
  Y" sentences, any sentence marked "remember (that)", "reminder:", "note:", "FYI" or
  `[IMPORTANT]`, and the decisions, plans, habits and own events of hub/memory/statements.py;
  questions and other first-person sentences (profiles keep those) are skipped. The subject
  key is X without its article ("my X" becomes "<person> X"), or the first three words;
- a procedure is a message that starts "how to X:", "steps to X:" or "to X," followed by at
  least two steps (a list, numbered steps, or "first ..., then ..."), or "the X procedure:"
  with comma-separated steps;
- two notes are the same when their search terms (`hub.memory.lexical.tokenize`: stemmed,
  stopwords dropped, CJK bigrams) overlap by `MERGE_SIMILARITY` (Jaccard); merging keeps the
  first note's text and appends the other notes' sentences it does not already hold.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Protocol, runtime_checkable

from hub.memory.documents import IMPORTANT_MARK, Layer, MemoryItem
from hub.memory.handoff import HandoffNote, offline_handoff
from hub.memory.lexical import tokenize
from hub.memory.sharing import sharer
from hub.memory.statements import said_of_them, stated
from hub.memory.text import clip, is_placeholder
from hub.plaintext import one_line

log = logging.getLogger(__name__)

MERGE_SIMILARITY = 0.6  # offline: notes this alike (Jaccard of terms) are near-duplicates
SAME_STATEMENT = 0.8  # a fact this alike to its note restates it (else it contradicts it)


@dataclass(frozen=True, slots=True)
class SessionTurn:
    """One line of a finished conversation session."""

    role: str  # "user" | "assistant"
    author: str
    text: str
    at: datetime  # aware UTC


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation idle long enough to be summarized into the episode log."""

    anima: str
    conversation: str  # conversation key (address string)
    channel_key: str
    where: str  # "#general on slack"
    person_id: str | None
    scope: str  # RecallScope.scope_of_new_item() of the conversation
    turns: list[SessionTurn]
    last_turn_id: int  # the summary is written once per (conversation, last turn)
    dm: bool = False  # a DM: the person gets a handoff (hub/people/handoffs.py)


@dataclass(frozen=True, slots=True)
class Fact:
    """Something worth keeping, distilled from episode sections of one privacy scope."""

    layer: Layer  # SEMANTIC (knowledge/) or PROCEDURAL (procedures/)
    subject: str  # the key contradictions are found by: "budget code", "how to deploy"
    title: str
    text: str
    sources: tuple[str, ...]  # ids of the episode sections it comes from
    important: bool = False
    # A log (what a person did on a day): statements of its subject add up, one line each,
    # instead of one superseding another.
    accumulates: bool = False


@runtime_checkable
class Distiller(Protocol):
    name: str

    async def summarize_session(self, session: Session) -> str: ...

    async def handoff(self, session: Session) -> HandoffNote:
        """Where the person left off (hub/memory/handoff.py)."""
        ...

    async def extract(
        self, anima: str, sections: Sequence[MemoryItem], subjects: Sequence[str]
    ) -> list[Fact]:
        """Facts in `sections` (all of one scope); `subjects` are the keys already known."""
        ...

    async def same(self, first: str, second: str) -> bool:
        """Whether two notes (given their candidate similarity) say the same thing."""
        ...

    async def merge(self, texts: Sequence[str]) -> str: ...

    async def compress(self, anima: str, sections: Sequence[MemoryItem]) -> str: ...


# ----------------------------------------------------------------------------- text rules

_SPEAKER = re.compile(r"^\*\*(?P<who>[^*\n]{1,80})\*\*(?: \([^)\n]*\))?:\s?(?P<text>.*)$")
# CJK sentences follow one another with no space: 「…行きました。来週…」 is two.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")
# Facts are looked for clause by clause: "A lot happened - I joined a new group last Tues."
_CLAUSE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+|\s+[-–—]+\s+")
_CJK_STOP = ("。", "！", "？")
_MARKER = re.compile(
    r"^(?:(?:please\s+)?(?:remember|reminder|note|fyi|for the record|keep in mind|heads up|"
    r"psa|(?:team |house )?rule|policy)\b(?:\s+that)?\s*[:,\-–]?\s*"
    r"|(?:リマインダー|メモ|注意|ルール|提醒|备注|注意|规定)\s*[:：]\s*)",
    re.IGNORECASE,
)
# A correction's lead-in ("Update: the code is now FAL-9000", "Actually, we decided…"): the
# statement after it is the fact, which replaces what it corrects.
_AMENDS = re.compile(
    r"^(?:(?:update|updated|correction|edit)\s*[:\-–]|(?:actually|in fact|to be clear|"
    r"scratch that|to correct myself|sorry)\b\s*[,:\-–]?)\s*",
    re.IGNORECASE,
)
_COPULA = re.compile(
    r"^(?P<subject>[^,;:!?()\"]{2,60}?)\s+(?:is now|are now|is|are|was|were|has moved to|"
    r"have moved to|moved to|has changed to|have changed to|changed to|will be|remains|stays)"
    r"\s+(?P<value>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PROCEDURE = re.compile(
    r"^(?:here(?:'s| is) )?(?:how to|steps to|to)\s+(?P<task>[^:\n,.]{3,60}?)\s*[:,]\s*"
    r"(?P<steps>.+)$",
    re.IGNORECASE | re.DOTALL,
)
_NAMED_PROCEDURE = re.compile(
    r"^(?:the\s+|our\s+)?(?P<task>[^:：\n]{2,40}?)\s+(?:procedure|process|checklist|runbook|"
    r"playbook|steps)\s*[:：\-–]\s*(?P<steps>.+)$",
    re.IGNORECASE | re.DOTALL,
)
# What comes before a named procedure's name ("We decided the", "Here is our"): the name is
# what follows the last determiner.
_LEAD_IN = re.compile(r"^.*\b(?:the|our|this|my)\s+", re.IGNORECASE)
_CJK_PROCEDURE = re.compile(
    r"^(?P<task>[^:：\n]{1,20}?)(?:の手順|手順|的步骤|的流程|流程|步骤)\s*[:：]\s*(?P<steps>.+)$",
    re.DOTALL,
)
_COMMAS = re.compile(r"\s*[,、，→]\s*")
_LIST_ITEM = re.compile(r"(?:^|\n)\s*(?:[-*•]|\d+[.)])\s+")
_INLINE_NUMBER = re.compile(r"(?:^|\s)\d+[.)]\s+")
_STEP_WORDS = re.compile(
    r";|,?\s*\b(?:and\s+)?(?:then|finally|after that)\b,?|^\s*first\b,?", re.IGNORECASE
)
# "X is awesome", "Y was so special": an opinion in passing, not a fact to file.
_EVALUATIVE = re.compile(
    r"^(?:(?:so|super|really|very|pretty|quite|such|just|absolutely|truly|totally|"
    r"incredibly|extremely|a|an|the|most|kind of|sort of|all)\s+)*"
    r"(?:awesome|amazing|great|cool|special|important|beautiful|lovely|wonderful|nice|fun|"
    r"fantastic|incredible|inspiring|powerful|crucial|hard|tough|good|bad|terrible|awful|"
    r"sweet|cute|perfect|exciting|interesting|stunning|gorgeous|brilliant|fabulous|magical|"
    r"rewarding|challenging|impressive|meaningful|huge|essential|vital|helpful|valuable|"
    r"precious|epic|peaceful|relaxing|therapeutic|healing|inspirational|awesome|fine|okay|"
    r"ok|true|right|worth it|a blast|a must|a lot|the best|the worst|blessed|lucky|"
    r"grateful|thankful|happy|sad|proud|glad)\b",
    re.IGNORECASE,
)
_DETERMINERS = frozenset({"the", "a", "an", "our", "this", "that", "these", "those", "its"})
_NOT_SUBJECTS = frozenset(
    {"it", "this", "that", "there", "here", "he", "she", "they", "you", "i", "i'm", "we"}
    | {"what", "which", "who", "where", "how", "why", "when", "everything", "something"}
    | {"nothing", "all", "one", "mine", "today", "tomorrow", "yesterday", "now", "so", "and"}
    | {"but", "also", "just", "there's", "it's", "that's", "yes", "no", "ok", "okay", "thanks"}
    | {"their", "your", "his", "her", "i've", "i'll", "i'd", "me", "let's"}
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_HEADER = re.compile(r"^\*\*(?:Session summary|Summary)\*\* ")  # of what stages write
_WORD_CHARS = re.compile(r"[^\w'’-]+")
# Negations as search terms ("isn't" is "isn" there, "nobody" is stemmed, "no longer"...).
_NEGATIONS = frozenset(
    term
    for word in [
        *("not", "no", "never", "none", "nobody", "nothing", "longer", "cannot", "isn", "aren"),
        *("wasn", "weren", "don", "doesn", "didn", "won", "shouldn", "couldn", "wouldn"),
    ]
    for term in tokenize(word)
)


@dataclass(frozen=True, slots=True)
class Line:
    who: str
    text: str


def speaker_lines(text: str) -> list[Line]:
    """`**Name** (where): text` lines of an episode section, continuation lines joined."""
    lines: list[Line] = []
    for raw in text.splitlines():
        match = _SPEAKER.match(raw)
        if match:
            lines.append(Line(match.group("who").strip(), match.group("text")))
        elif lines:
            lines[-1] = Line(lines[-1].who, f"{lines[-1].text}\n{raw}")
        elif raw.strip():
            lines.append(Line("", raw))
    return [Line(line.who, line.text.strip()) for line in lines if line.text.strip()]


def said_lines(item: MemoryItem, anima: str) -> list[Line]:
    """Who said what in an episode section. A person's turn (`**name** (where): message`,
    then `**anima**: reply`, as MemoryService.record_turn writes it) is those two lines
    whatever the message holds: a line in it shaped like another's label is still the
    person's, so a message cannot make a fact read as someone else's. Anything else (a
    summary, an Anima's own note, a hand-written section) is read by its labels. What a
    person shared (`**name** (shared with the team): words`) is one line, theirs, whole."""
    reply_at = item.text.find(f"\n**{anima}**: ")
    first = _SPEAKER.match(item.text.split("\n", 1)[0])
    if first is not None and item.person is not None and sharer(item.scope) == item.person:
        # What a person shared (hub/memory/sharing.py) is their words and nothing else.
        words = "\n".join([first.group("text"), *item.text.split("\n")[1:]]).strip()
        return [Line(first.group("who").strip(), words)] if words else []
    if item.person is None or _HEADER.match(item.text) or first is None or reply_at < 0:
        return speaker_lines(item.text)
    said = item.text[:reply_at].split("\n", 1)
    message = "\n".join([first.group("text"), *said[1:]]).strip()
    reply = item.text[reply_at + len(f"\n**{anima}**: ") :].strip()
    lines = [Line(first.group("who").strip(), message), Line(anima, reply)]
    return [line for line in lines if line.text]


def terms(text: str) -> set[str]:
    return set(tokenize(text))


def similarity(first: str, second: str) -> float:
    """Jaccard overlap of the two texts' search terms (1.0: the same terms)."""
    a, b = terms(first), terms(second)
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def restates(first: str, second: str, subject: str) -> bool:
    """Whether two statements about `subject` say the same: apart from the subject's own
    terms, one holds all the other's terms (a restatement, perhaps with more words) or they
    overlap by `SAME_STATEMENT`; a negation on one side only makes them differ."""
    about = terms(subject)
    a, b = terms(first) - about, terms(second) - about
    if not a or not b:
        return a == b
    if (a ^ b) & _NEGATIONS:
        return False
    return a <= b or b <= a or len(a & b) / len(a | b) >= SAME_STATEMENT


def lead(text: str, limit: int, sentences: int = 1) -> str:
    """The first sentences of a text, cut to `limit` characters; whole if [IMPORTANT]."""
    if IMPORTANT_MARK in text:
        return clip(text, max(limit, 1000))
    parts = [p for p in _SENTENCE.split(text.strip()) if p.strip()]
    return clip(joined(parts[:sentences]), limit)


def joined(sentences: Sequence[str]) -> str:
    """Sentences as one line: a space between them, none after a CJK full stop."""
    line = ""
    for sentence in sentences:
        sentence = sentence.strip()
        line += sentence if not line or line.endswith(_CJK_STOP) else " " + sentence
    return line


def _steps(text: str, commas: bool = False) -> list[str]:
    """A procedure's steps: a list, numbered steps, "first …, then …"; with `commas`
    (a named procedure: "the deploy procedure: a, b, c"), comma-separated ones too."""
    if len(_LIST_ITEM.findall(text)) >= 2:
        parts = _LIST_ITEM.split(text)
    elif len(_INLINE_NUMBER.findall(text)) >= 2:
        parts = _INLINE_NUMBER.split(text)
    else:
        parts = _STEP_WORDS.split(text)
        if commas and len(parts) < 2:
            parts = [p for piece in parts for p in _COMMAS.split(piece)]
    steps = [" ".join(p.split()).strip(" .,;。") for p in parts]
    return [s for s in steps if s]


def _procedure(plain: str) -> tuple[str, list[str]] | None:
    """(task, steps) when a message is a procedure, in any of the ways one is written."""
    for pattern, commas in ((_PROCEDURE, False), (_NAMED_PROCEDURE, True), (_CJK_PROCEDURE, True)):
        found = pattern.match(plain)
        if found:
            steps = _steps(found.group("steps"), commas)
            task = found.group("task")
            if pattern is _NAMED_PROCEDURE:  # "We decided the release procedure: …"
                task = _LEAD_IN.sub("", task)
            if len(steps) >= 2:
                return " ".join(task.casefold().split()), steps
    return None


def _subject_words(raw: str, who: str) -> list[str]:
    """Lowercase words without punctuation or a leading article; "my" becomes the speaker."""
    words = [w for w in (_WORD_CHARS.sub("", w) for w in raw.casefold().split()) if w]
    while words and words[0] in _DETERMINERS:
        words = words[1:]
    if words and words[0] == "my":
        return [*who.casefold().split(), *words[1:]] if who else []
    return words


def _subject(raw: str, who: str) -> str | None:
    """The subject key of "X is Y": X, unless it is a pronoun or too long to be a name."""
    words = _subject_words(raw, who)
    if not words or words[0] in _NOT_SUBJECTS or len(words) > 6:
        return None
    return " ".join(words)


def title_of(subject: str, said: str = "") -> str:
    """The subject as a title, in the case `said` wrote it ("Renew the SSL", not "ssl";
    "Fox Mulder's badge number", not "Fox mulder badge number")."""
    words = subject.split()
    if said and words:
        pattern = r"(?:['’]s)?\W+".join(re.escape(w) for w in words)
        found = re.search(rf"(?<!\w){pattern}(?!\w)", said, re.IGNORECASE)
        if found:
            subject = found.group(0)
    return subject[:1].upper() + subject[1:]


def _owned(sentence: str, who: str) -> str:
    """ "My X is Y and I Z" said by Alice is kept as "Alice's X is Y and they Z", the
    sentence's first letter upper case whatever the case of the name as written."""
    if who and re.match(r"my\s", sentence, re.IGNORECASE):
        sentence = f"{who}'s {said_of_them(sentence[3:])}"
    return sentence[:1].upper() + sentence[1:]


def facts_in(
    who: str, text: str, source: str, addressee: str = "", day: date | None = None
) -> list[Fact]:
    """The offline rules on one person's line (see the module doc). A leading "aria," or
    "@aria" naming the Anima spoken to is how people address it, not part of the fact.
    `day` (the line's) files a person's own events in that day's log of them."""
    if addressee:
        text = re.sub(rf"^\s*@?{re.escape(addressee)}\b\s*[,:]?\s*", "", text, flags=re.I)
    important = IMPORTANT_MARK in text
    plain = _MARKER.sub("", _AMENDS.sub("", text.replace(IMPORTANT_MARK, "").strip())).strip()
    procedure = _procedure(plain)
    if procedure is not None:
        task, steps = procedure
        body = "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1))
        key = f"how to {task}"
        return [Fact(Layer.PROCEDURAL, key, title_of(key), body, (source,), important)]
    found: list[Fact] = []
    for raw in _CLAUSE.split(text):
        marked_important = IMPORTANT_MARK in raw
        sentence = _AMENDS.sub("", raw.replace(IMPORTANT_MARK, "").strip())
        stripped = _MARKER.sub("", sentence).strip()
        marked = marked_important or stripped != sentence
        sentence = " ".join(stripped.split())
        words = sentence.split()
        if sentence.endswith(("?", "？")) or (len(words) < 3 and not _CJK.search(sentence)):
            continue
        kept = stated(sentence, who)
        if kept is not None and kept.kind == "event" and day is not None:
            key, title = (
                f"{who.casefold()} {day.isoformat()}",
                title_of(f"{who} on {day:%-d %B %Y}"),
            )
            said = f"- {kept.text[:1].upper()}{kept.text[1:]}"
            found.append(Fact(Layer.SEMANTIC, key, title, said, (source,), marked_important, True))
            continue
        if kept is not None:  # a decision, a plan, a habit (or an event of no known day)
            said = _owned(kept.text, who)
            key = kept.subject
            found.append(
                Fact(Layer.SEMANTIC, key, title_of(key), said, (source,), marked_important)
            )
            continue
        if words[0].casefold() in {"i", "i'm", "i've", "i'll", "i'd", "me"}:
            continue
        copula = _COPULA.match(sentence)
        if copula and not marked and _EVALUATIVE.match(copula.group("value")):
            continue
        subject = _subject(copula.group("subject"), who) if copula else None
        if subject is None and marked:
            subject = " ".join(_subject_words(sentence, who)[:3]) or None
        if subject is None:
            continue
        statement = _owned(sentence, who)
        title = title_of(subject, statement)
        found.append(Fact(Layer.SEMANTIC, subject, title, statement, (source,), marked_important))
    return found


def add_lines(log: str, text: str) -> str:
    """A log with the lines of `text` it does not already hold (nearly) appended."""
    lines = [ln for ln in log.strip().splitlines() if ln.strip()]
    for line in text.strip().splitlines():
        if line.strip() and all(similarity(line, ln) < SAME_STATEMENT for ln in lines):
            lines.append(line.strip())
    return "\n".join(lines)


def merge_texts(texts: Sequence[str]) -> str:
    """The first text, then each sentence of the others that it does not already say."""
    if not texts:
        return ""
    kept = texts[0].strip()
    seen = [s for s in _SENTENCE.split(kept) if s.strip()]
    extra: list[str] = []
    for text in texts[1:]:
        for sentence in _SENTENCE.split(text.strip()):
            if sentence.strip() and all(similarity(sentence, s) < SAME_STATEMENT for s in seen):
                seen.append(sentence)
                extra.append(sentence.strip())
    return kept if not extra else kept + "\n\n" + joined(extra)


# ----------------------------------------------------------------------------- offline


class OfflineDistiller:
    """The deterministic rules: no model, same input, same output."""

    name = "offline"

    async def summarize_session(self, session: Session) -> str:
        return "\n".join(
            f"**{one_line(turn.author)}**: "  # a name cannot start a line of its own
            f"{lead(turn.text, 300 if turn.role == 'user' else 160, 2)}"
            for turn in session.turns
            if turn.text.strip() and not is_placeholder(turn.text)
        )

    async def handoff(self, session: Session) -> HandoffNote:
        return offline_handoff(session.turns)

    async def extract(
        self, anima: str, sections: Sequence[MemoryItem], subjects: Sequence[str]
    ) -> list[Fact]:
        found: list[Fact] = []
        for item in sections:
            for line in said_lines(item, anima):
                if line.who.casefold() == anima.casefold():
                    continue
                if not line.who and item.person is None:
                    continue  # what the Anima posted on its own (a heartbeat, a cron)
                day = item.created.date()
                found.extend(facts_in(line.who, line.text, item.id, anima, day))
        return found

    async def same(self, first: str, second: str) -> bool:
        return similarity(first, second) >= MERGE_SIMILARITY

    async def merge(self, texts: Sequence[str]) -> str:
        return merge_texts(texts)

    async def compress(self, anima: str, sections: Sequence[MemoryItem]) -> str:
        lines: list[str] = []
        for item in sections:
            said = said_lines(item, anima)
            people = [ln for ln in said if ln.who and ln.who.casefold() != anima.casefold()]
            if not people:  # no one speaks (a heartbeat, a summary's prose): its beginning
                prose = [ln for ln in item.text.splitlines() if not _HEADER.match(ln)]
                lines.append(f"- {item.section}: {lead(' '.join(prose) or item.text, 300, 2)}")
            for line in people:
                lines.append(f"- {item.section} {line.who}: {lead(line.text, 160)}")
        return "\n".join(lines)
