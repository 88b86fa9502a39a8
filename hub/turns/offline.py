"""The offline mode: answers without a language model, from what the hub knows.

It never pretends to be a model. The first time it meets a person it says who the Anima is
and exactly how to configure a model; after that (in any conversation) one line says it is
offline. An answer leads with what memory holds that matches the message (sharing a search
term with it: relevance, not whatever is recent), including what was learned about the
person, and says plainly when nothing relevant is known.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from hub.memory.excerpt import HEADER, cut, excerpt
from hub.memory.lexical import frames_question, tokenize
from hub.redaction.redact import redact
from hub.turns.episodes import OFFLINE_NOTE
from hub.turns.llm import TurnContext

_WORD_RE = re.compile(r"\S+\s*")
_HOW_TO = (
    "To give me a language model, set `model` in the `[llm]` section of `hub.toml` in the "
    'data folder (for example `model = "anthropic/claude-sonnet-4-5"` with '
    '`api_key = "env:ANTHROPIC_API_KEY"`, or `model = "ollama_chat/llama3.1"` for a local '
    "Ollama; README has the lines for vLLM, LM Studio and llama.cpp too), "
    "or export `ANIMAHUB_LLM__MODEL=...`, then restart the hub."
)
_SHORT_HOW_TO = (
    "_(Offline mode: no language model is configured. Set `model` under `[llm]` in "
    "`hub.toml`, or `ANIMAHUB_LLM__MODEL`, and restart the hub.)_"
)
# What is said in a DM stays between the person and the Animas until they share it
# (hub/people/sharing.py): the first offline answer in a DM says so, and each noted statement there
# says how.
PRIVATE_HINT = (
    "What you tell me here stays between us. To share something you said with the team, "
    "send /share right after it (or /share followed by the words)."
)
SHARE_HINT = "_(This stays between us; send /share to share it with the team.)_"
_ASKED = re.compile(r"(?:[?？]|ですか|ますか|吗)[。.]?\s*$")  # a line that is only asked
_QUESTION = re.compile(r"[?？]\s*$|(?:ですか|ますか|吗)[。.]?\s*$")
# "where is the budget" asks without its "?"; "How to deploy: 1. run the tests", "Do not
# deploy on Fridays." and "When the build fails, page the on-call." tell.
_ASKING_WORD = re.compile(
    r"^\s*(what|who|whom|whose|when|where|which|why|how|do|does|did|is|are|can|could)\b"
    r"(?!\s+(?:not|to)\b)(?!n't)",
    re.IGNORECASE,
)
_TELLS = re.compile(r"[.!:。！：]\s+\S|[.!。！]\s*$")  # a statement's stop, or a colon


def asks(text: str) -> bool:
    """Whether a message is a question: it ends as one, or opens with an asking word and
    has no stop or colon of a statement."""
    return bool(_QUESTION.search(text) or (_ASKING_WORD.match(text) and not _TELLS.search(text)))


# "What did I ask?": the conversation itself is the answer.
_BACK = re.compile(
    r"\b(what|which)\b.*\b(did|have)\s+i\b.*\b(ask|say|said|tell|told|write|wrote|mention)",
    re.IGNORECASE,
)
_SHOWN = 5
_ABOUT_ME = re.compile(
    r"\b(?:about|of)\s+(?:me|myself)\b|\bwho\s+am\s+i\b|私(?:について|のこと)|关于我",
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\s*(?:I|I'm|I've|I'd|I'll|My|Me|Mine)\b|\s*私|\s*我", re.IGNORECASE)
_OFFLINE_REPLY = re.compile(r"\s*\*\*[^*]{1,40}\*\*: " + re.escape(OFFLINE_NOTE) + r"\s*$")


def _quote(text: str, limit: int = 120) -> str:
    """The person's words as the reply repeats them: never with a secret they pasted."""
    return cut(_flat(text), limit)


def _flat(text: str) -> str:
    """`text` on one line, with any secret in it redacted."""
    return " ".join(redact(text)[0].split())


def _excerpt(line: str, wanted: set[str]) -> str:
    """A recalled line as the reply shows it: the part that matches (`excerpt`)."""
    return excerpt(_flat(line), wanted, 200)


# A number of one or two digits, alone or split out of "Q3" or "staging2", is in every
# numbered list ("1. run the tests 2. tag …"): sharing one says nothing of the subject.
_SMALL_NUMBER = re.compile(r"\d{1,2}")


def _terms(text: str) -> set[str]:
    return {t for t in tokenize(text) if not frames_question(t) and not _SMALL_NUMBER.fullmatch(t)}


# A recalled line's header (`HEADER`: when, who, where) is no match: "12 March" would find
# every line of a 12th, and "web" every web turn. Who said it stays: a question naming Priya
# asks about her words. Nor is who noted a profile fact when ("_(mika, 2026-12-01)_").
_NOTED_BY = re.compile(r"\s*_\([^)\n]{1,80}\)_\s*$")


def _said(line: str) -> str:
    """The line as said: its speaker and words."""
    line = HEADER.sub(lambda m: f"{m['who']}:" if m["who"] else "", line, count=1)
    return _NOTED_BY.sub("", line, count=1)


def _words(line: str) -> str:
    """What a line says, without who said it, when, where, case and punctuation."""
    said = _NOTED_BY.sub("", HEADER.sub("", line, count=1), count=1)
    return " ".join(re.findall(r"\w+", said.casefold()))


def relevant(text: str, lines: Sequence[str], spoken_to: str = "") -> list[str]:
    """The lines whose words or speaker (not their time or place) share a search term with
    `text` (question words aside), most shared first, each once. The name of the Anima
    `spoken_to` is no match: "mika, have aria…" addresses mika, it does not ask about her
    (and her name labels every reply she gave)."""
    return list(dict.fromkeys(line for _, line in _ranked(text, lines, spoken_to)))


def answering(text: str, lines: Sequence[str], spoken_to: str = "") -> list[str]:
    """What of the recalled `lines` answers `text`: those sharing a search term with it
    (`relevant`), each without an offline reply's placeholder, less a line that is only a
    question asked before (it answers nothing). An offline task report lists these."""
    return [
        line
        for line in map(_without_offline_reply, relevant(text, lines, spoken_to))
        if not _ASKED.search(line)
    ]


def _wanted(text: str, spoken_to: str) -> set[str]:
    return _terms(text) - set(tokenize(spoken_to))


def _shared(wanted: set[str], line: str) -> int:
    return len(wanted & set(tokenize(_said(line))))


_STAMP = re.compile(r"^\s*\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]")


def _ranked(text: str, lines: Sequence[str], spoken_to: str = "") -> list[tuple[int, str]]:
    """`relevant`'s lines with how many terms each shares; of lines sharing as many, the
    latest first: "the host is db7" said after "the host is db1" is what holds now."""
    wanted = _wanted(text, spoken_to)
    scored = [(_shared(wanted, line), line) for line in lines]
    latest = sorted((s for s in scored if s[0] > 0), key=lambda s: _stamp(s[1]), reverse=True)
    return sorted(latest, key=lambda s: -s[0])  # stable: ties stay latest first


def _stamp(line: str) -> str:
    stamp = _STAMP.match(line)
    return stamp.group(1) if stamp else ""


def compose(ctx: TurnContext) -> str:
    earlier = [t for t in ctx.earlier_from_person if t.strip()]
    if earlier or not ctx.offline_intro:
        return _follow_up(ctx, earlier)
    name = ctx.anima.capitalize()
    lines = [
        f"Hello {ctx.person.display_name}. I'm {name}, the team's "
        f"{ctx.anima_title.lower()}: I {ctx.anima_summary}.",
        "",
        "**No language model is configured, so I'm answering in offline mode.** I can't "
        "compose a real answer yet, but I keep everything you tell me, and I'll remember it "
        "once a model is set.",
        "",
        *([PRIVATE_HINT, ""] if ctx.tools.is_dm else []),
        f"This is the start of our conversation ({ctx.where}).",
        "",
        *_left_off(ctx),
        f"You said: “{_quote(ctx.text, 300)}”",
        "",
        *_answer(ctx, earlier),
        _HOW_TO,
    ]
    return "\n".join(lines)


def _follow_up(ctx: TurnContext, earlier: list[str]) -> str:
    """After the first time: what was asked, what memory holds about it, one line on being
    offline."""
    name, quoted = ctx.person.display_name, f"“{_quote(ctx.text, 300)}”"
    asked = asks(ctx.text)
    return "\n".join(
        [
            f"{name}, you asked: {quoted}" if asked else f"Noted, {name}: {quoted}",
            "",
            # Told in a DM, it stays theirs: say how it reaches the team.
            *([SHARE_HINT, ""] if ctx.tools.is_dm and not asked else []),
            *_left_off(ctx),
            *_answer(ctx, earlier),
            _SHORT_HOW_TO,
        ]
    )


def _answer(ctx: TurnContext, earlier: list[str]) -> list[str]:
    """What memory holds that matches the message; for a question, plainly that nothing
    does, when nothing does."""
    # "What do you know about me?" shares no word with the facts it asks for: all of them.
    everything = _ABOUT_ME.search(ctx.text)
    about = (
        list(ctx.about_person) if everything else relevant(ctx.text, ctx.about_person, ctx.anima)
    )
    asked = " ".join(ctx.text.split()).casefold()
    found = [
        line
        for line in map(_without_offline_reply, relevant(ctx.text, ctx.recalled_lines, ctx.anima))
        # A question asked before (this one, or "What's the release procedure?") answers
        # nothing; it only pushed what does down the list.
        if asked not in " ".join(line.split()).casefold() and not _ASKED.search(line)
    ]
    # What this conversation said that recall does not show yet: a turn is indexed in the
    # background, a few hundred ms after its reply, so a quick follow-up asks before it is.
    said_here = [
        t
        for t in relevant(ctx.text, earlier, ctx.anima)
        if asked not in " ".join(t.split()).casefold()
        and not _ASKED.search(t)  # another question answers nothing either
        and not any(" ".join(t.split()) in " ".join(line.split()) for line in found)
    ]
    found = _said_once(found, about[:_SHOWN], ctx.person.display_name)
    lines: list[str] = []
    if _BACK.search(ctx.text) and earlier:  # "what did I ask?": the conversation itself
        lines += ["Before this, you said:", *(f"- “{_quote(t)}”" for t in earlier[-3:]), ""]
    elif said_here:
        lines += ["Earlier here, you said:", *(f"- “{_quote(t)}”" for t in said_here[:_SHOWN])]
        lines += [""]
    wanted = _terms(ctx.text)
    known: list[str] = []
    if about:
        shown = (f"- {_as_told(_excerpt(fact, wanted))}" for fact in about[:_SHOWN])
        known += ["What I know about you:", *shown, ""]
    if found:
        recalled = ["From my memory:", *(f"- {_excerpt(f, wanted)}" for f in found[:_SHOWN]), ""]
        # What matches best leads: a profile fact sharing only "code" does not go above the
        # line that shares "budget code for Project Falcon".
        asking = _wanted(ctx.text, ctx.anima)
        best_about = max((_shared(asking, fact) for fact in about), default=0)
        ahead = not everything and _shared(asking, found[0]) > best_about
        known = [*recalled, *known] if ahead else [*known, *recalled]
    lines += known
    if not lines and asks(ctx.text):
        lines += ["I don't know anything about that yet.", ""]
    return lines


def _as_told(fact: str) -> str:
    """A fact kept in the person's own words ("My PIN is…") quoted, so that under "What I know
    about you" it does not read as the Anima speaking of itself."""
    noted = _NOTED_BY.search(fact)
    words = fact[: noted.start()] if noted else fact
    if not _FIRST_PERSON.match(words):
        return fact
    return f"“{words.strip()}”" + (fact[noted.start() :] if noted else "")


def _said_once(found: list[str], about: list[str], person: str) -> list[str]:
    """`found` without a line whose words a fact in `about` or a line above already says:
    a fact the person told about themselves is also the turn they told it in, and a note
    consolidation kept is also its episode, which says "Maya Chen's" for their "my"."""
    theirs = f" {_words(person)} s "

    def words_of(line: str) -> str:
        return f" {_words(line)} ".replace(theirs, " my ")

    said = [words_of(fact) for fact in about]
    once = []
    for line in found:
        words = words_of(line)
        if not any(words in above for above in said):
            said.append(words)
            once.append(line)
    return once


def _without_offline_reply(line: str) -> str:
    """A recalled turn without its offline reply's placeholder: what was said is the point."""
    return _OFFLINE_REPLY.sub("", line).rstrip()


def _left_off(ctx: TurnContext) -> list[str]:
    """The handoff offered to this turn (hub/people/handoffs.py): offered, not assumed."""
    if not ctx.handoff:
        return []
    return [
        "Where we left off:",
        *(f"- {line}" for line in ctx.handoff),
        "Want to pick that up?",
        "",
    ]


# Something the offline mode can still do for a message (delegate a task asked for in plain
# words): what it did, said first in the reply, or None.
Act = Callable[[TurnContext], Awaitable[str | None]]


class OfflineResponder:
    def __init__(self, act: Act | None = None) -> None:
        self._act = act

    async def stream(self, ctx: TurnContext) -> AsyncIterator[str]:
        done = await self._act(ctx) if self._act is not None else None
        text = compose(ctx)
        if done:
            text = f"{_done_line(done)}\n\n{text}"
        # Streamed word by word so every platform's streaming path is exercised offline too.
        for match in _WORD_RE.finditer(text):
            yield match.group(0)


def _done_line(done: str) -> str:
    if done.startswith("error: "):
        return f"I could not hand that on: {done.removeprefix('error: ')}"
    return f"Done: {done}"
