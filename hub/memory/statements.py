"""How people state what is worth keeping, for the offline distiller (hub/memory/distill.py).

Beyond "X is Y" and marked sentences, a sentence is kept as knowledge when it is

- a decision: "we decided / agreed / chose to X", "X was decided", 「…ことに決めました」,
  「决定…」;
- a plan: "next Tuesday we will X", "we're going to X", "the team plans to X",
  「来週…します」, 「下周…去…」;
- a shared preference or habit: "we prefer X", "we always X", "the team never X";
- a first-person event: "I went to / visited / started / joined … X", kept as
  "<person> went to X" (what a person says of their own day), 「私は先週京都に行きました」,
  「我上周去了上海」;
- a first-person plan: "I'm planning to X", "I plan to X", and "I will / I'm going to / I'm
  flying to X" when it says when ("next Tuesday", "this summer", "in May"), kept as
  "<person> is planning to X" beside their events (a promise in passing, "I'll keep that in
  mind", says no when and is not kept); 「私は来週大阪へ出張します」, 「我下周去北京出差」;

and the subject it is filed under comes from what was decided, planned or done (its first
content words, without articles, prepositions or time words: days, months, a date's day),
or for a tool chosen for a purpose ("use Postgres for billing"), the purpose, so a later
decision on the same thing supersedes the earlier one. A procedure may also be written "the
X procedure: a, b, c" (or 「Xの手順：」, 「X的步骤：」) with its steps separated by commas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TIME = (
    r"(?:next|this|on|coming)\s+(?:week|month|year|weekend|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday)|tomorrow|tonight|later today|soon"
)
_MONTH = r"january|february|march|april|may|june|july|august|september|october|november|december"
# When a person's own plan is for: _TIME, or a season, a month, a count of days ahead.
_LATER = re.compile(
    rf"\b(?:{_TIME}|(?:this|next|coming)\s+(?:summer|fall|autumn|winter|spring|semester|"
    rf"quarter|{_MONTH})|in\s+(?:{_MONTH}|a\s+(?:few|couple\s+of)?\s*(?:days?|weeks?|months?)|"
    r"\w+\s+(?:days|weeks|months))|later\s+this\s+\w+|over\s+the\s+weekend)\b",
    re.IGNORECASE,
)
_WHO_PLURAL = r"(?:we|the team|our team|they|everyone)"
_DECISION = re.compile(
    rf"^(?:so,?\s+|ok(?:ay)?,?\s+)?{_WHO_PLURAL}\s+(?:have\s+|has\s+|finally\s+)?"
    r"(?P<verb>decided|agreed|chose|settled on|went with|are going with|will go with)\s+"
    r"(?:to\s+|on\s+|that\s+)?(?P<what>\S.{2,})$",
    re.IGNORECASE,
)
# A choice of a tool for a purpose is filed under the purpose, so a later choice for it
# supersedes the earlier: "use Postgres for billing", then "use MySQL for billing".
_USE = r"(?:use|adopt|switch to|move to|migrate to|go with|stick with|pick|choose)\s+"
_FOR = r"(?P<choice>\S.*?)\s+(?:for|as)\s+(?P<purpose>\S.{2,})$"
_CHOICE = re.compile(rf"^{_USE}{_FOR}", re.IGNORECASE)
_CHOSEN = re.compile(rf"^(?:{_USE})?{_FOR}", re.IGNORECASE)  # after "chose", "went with"
_CHOOSING = frozenset({"chose", "settled on", "went with", "are going with", "will go with"})
_DECIDED = re.compile(r"^(?P<what>.{3,}?)\s+(?:was|has been|is)\s+decided\b", re.IGNORECASE)
_PLAN = re.compile(
    rf"^(?:(?:{_TIME}),?\s+)?{_WHO_PLURAL}\s*(?:will|['’]ll|are going to|['’]re going to|plan to|"
    r"plans to|are planning to|intend to|want to)\s+(?P<what>\S.{2,})$",
    re.IGNORECASE,
)
_HABIT = re.compile(
    rf"^{_WHO_PLURAL}\s+(?:prefer|prefers|always|never|usually|normally|like to|tend to)\s+"
    r"(?P<what>\S.{2,})$",
    re.IGNORECASE,
)
_EVENT_VERBS = (
    r"went|visited|started|finished|joined|moved|bought|got|met|attended|adopted|ran|painted|"
    r"took|made|read|watched|learned|lost|won|gave|received|signed up|volunteered|traveled|"
    r"travelled|graduated|quit|opened|launched|shipped|fixed|completed|began|celebrated|"
    r"explored|tried|found|baked|cooked|wrote|played|hosted|organized|organised|saw|"
    r"picked up|stopped by|drove|flew|hiked|camped|performed|practiced|practised|applied|"
    r"presented|spoke|built|created|launched|released|deployed|sold|planted|rescued"
)
# A person's own event: "I went to X", "Actually, I just took the kids camping", "We
# celebrated her birthday", "I've been running farther": a lead-in of a few words allowed.
_EVENT = re.compile(
    r"^(?:[\w'’]+,?\s+){0,3}?(?P<who>i|we|my family and i|me and my \w+)\b\s*"
    r"(?:(?:just|finally|recently|also|even|actually)\s+)?"
    rf"(?:(?P<verb>{_EVENT_VERBS})\b|(?:['’]ve|have) been (?P<doing>\w+ing)\b)(?P<rest>.{{3,}})$",
    re.IGNORECASE,
)
# A person's own plan: "I'm planning to", "I plan on"; or, when it says when, "I will",
# "I'll", "I'm going to", "I'm flying" (group `later`).
_OWN_PLAN = re.compile(
    r"^(?P<lead>(?:[\w'’]+,?\s+){0,3}?)\bi(?:"
    r"(?P<plan>['’]m\s+planning\s+(?:to|on)|\s+am\s+planning\s+(?:to|on)|\s+plan\s+(?:to|on)"
    r"|\s+intend\s+to)"
    r"|(?P<later>['’]m\s+going\s+to|\s+am\s+going\s+to|['’]ll|\s+will|['’]m(?=\s+\w+ing\b)"
    r"|\s+am(?=\s+\w+ing\b)))\s+(?P<rest>\S.{2,})$",
    re.IGNORECASE,
)
# Japanese and Chinese say who by a topic word ahead of the rest, and often not at all.
_JA_ME = r"(?:私たち|僕たち|我々|わたし|私|僕|俺|うち)(?:は|も)?、?"
_JA_DECISION = re.compile(
    rf"^(?:{_JA_ME}|(?:チーム|みんな)(?:は|で)、?)?"
    r"(?P<what>.{2,}?)(?:ことに)?(?:決めました|決定しました|決まりました)"
)
_ZH_DECISION = re.compile(r"^(?:我们|大家)?(?:决定|同意)(?P<what>.{2,}?)。?$")
# A person's own past event: 「私は先週京都に行きました」 (when said, or 私 said), and only
# with no other subject in it (「昨日、雨が降りました」 is the rain's).
_JA_AGO = r"昨日|先週|先月|先日|この前|週末に|昨年|去年|今朝|さっき"
_JA_EVENT = re.compile(
    rf"^(?P<me>{_JA_ME})?(?P<when>(?:{_JA_AGO})(?:の[^がは、]{{1,6}}?)?(?:に|は)?、?)?"
    r"(?P<what>[^がは]{2,}?)(?:しました|ました)。?$"
)
_ZH_AGO = r"昨天|前天|上周|上星期|上个月|周末|去年|刚才|刚刚"
_ZH_EVENT = re.compile(rf"^我(?P<when>{_ZH_AGO})?(?P<what>[^我]{{1,}}?了.*?)。?$")
# A plan says when and then what, filed under the what: 「来週の火曜日にチームで京都へ出張します」
# (チームで京都へ出張), 「我们下周去北京出差」 (去北京出差).
_JA_WHEN = r"来週|再来週|今週|明日|明後日|あした|来月|今月|今度|週末|次回"
_JA_PLAN = re.compile(
    rf"^(?:{_JA_ME})?(?:{_JA_WHEN})(?:の[^にはで、]{{1,6}}(?=[にはで、]))?(?:に|は|、)?"
    r"(?P<what>.{2,}?)(?:します|する予定です|の予定です|予定です|つもりです|ます)。?$"
)
# Cut at 12 characters, a key may end on a particle: 「田中さんとミーティングが」.
_PARTICLES = "がをにはでとへのもや、"
_ZH_WHEN = r"下周|下星期|下个月|明天|后天|这周|本周|周末|下次"
_ZH_PLAN = re.compile(
    rf"^(?=.*(?:{_ZH_WHEN}))(?:{_ZH_WHEN})?(?:我们|大家|团队|我)(?:{_ZH_WHEN})?"
    r"(?P<what>(?:要|会|打算|计划|准备|去|开).{2,}?)。?$"
)
_NOT_KEY = frozenset(
    {"the", "a", "an", "our", "this", "that", "these", "those", "its", "their", "to", "on"}
    | {"at", "in", "by", "for", "from", "with", "of", "next", "before", "after", "until"}
    | {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {"tomorrow", "today", "tonight", "week", "month", "year", "weekend", "soon", "be"}
    | {"will", "and", "or", "it", "we", "us", "all", "some", "my", "me", "i"}
    | set(_MONTH.split("|"))
    | {"instead", "now", "again", "still", "rather"}
)
_WORD = re.compile(r"[^\W_][\w'’-]*")
_DAY_NUMBER = re.compile(r"\d{1,2}(?:st|nd|rd|th)?")
# The rest of a first-person event as said of the person: "I went to Kyoto with my sister"
# is "Dana went to Kyoto with their sister" (their: whoever the person is).
_THIRD = {"my": "their", "our": "their", "me": "them", "us": "them", "mine": "theirs"}
_THIRD |= {"ours": "theirs", "myself": "themselves", "ourselves": "themselves", "we": "they"}
# Lower case only: "the US" is a country, not "us".
_THIRD_PERSON = re.compile(r"\b(?:" + "|".join(_THIRD) + r")\b")
# "I" is "they" too (singular, as "their" is), whose verb is the plural one: "and I prefer
# tea" is "and they prefer tea", "I am" "they are", "I'm" "they're".
_I = re.compile(r"\bI(?:(?P<be>\s+(?:am|was))\b|(?P<tail>['’](?:m|ve|ll|d))\b|\b)")
_BE = {"am": "are", "was": "were"}


def _third_person(word: re.Match[str]) -> str:
    return _THIRD[word.group(0)]


def _they(found: re.Match[str]) -> str:
    if found["be"]:
        return f"they {_BE[found['be'].split()[0]]}"
    if found["tail"]:
        mark, tail = found["tail"][0], found["tail"][1:]
        return f"they{mark}{'re' if tail == 'm' else tail}"
    return "they"


def said_of_them(rest: str) -> str:
    """The rest of a sentence a person said of themselves, after their name: in the third
    person ("with my sister, whom I visit" is "with their sister, whom they visit")."""
    return _I.sub(_they, _THIRD_PERSON.sub(_third_person, rest))


@dataclass(frozen=True, slots=True)
class Statement:
    kind: str  # "decision" | "plan" | "habit" | "event" (a person's own event or plan)
    subject: str  # the note's key
    text: str  # the sentence as it is kept


def key_words(text: str, limit: int = 3) -> str:
    """The first content words of a phrase, lowercased: what a note is filed under."""
    words = [w.casefold() for w in _WORD.findall(text)]
    # A date's day ("April 2", "the 3rd") is when, as its month is, not what.
    kept = [w for w in words if w not in _NOT_KEY and not _DAY_NUMBER.fullmatch(w)]
    return " ".join(kept[:limit])


def _choice_key(decision: re.Match[str]) -> str:
    """The purpose a decision chose something for ("billing service"), or ""."""
    chose = decision.group("verb").casefold() in _CHOOSING
    choice = (_CHOSEN if chose else _CHOICE).match(decision.group("what"))
    return key_words(choice.group("purpose")) if choice else ""


def stated(sentence: str, who: str) -> Statement | None:
    """The decision, plan, habit or first-person event `sentence` states, if any."""
    who = who[:1].upper() + who[1:]  # a name as typed ("dana") starts a word of a sentence
    for kind, pattern in (("decision", _DECISION), ("plan", _PLAN), ("habit", _HABIT)):
        found = pattern.match(sentence)
        if found and kind == "decision" and (key := _choice_key(found)):
            return Statement(kind, f"decision: what to use for {key}", sentence)
        if found and (key := key_words(found.group("what"))):
            return Statement(kind, f"{kind}: {key}", sentence)
    decided = _DECIDED.match(sentence)
    if decided and (key := key_words(decided.group("what"))):
        return Statement("decision", f"decision: {key}", sentence)
    for kind, pattern in (
        ("decision", _JA_DECISION),
        ("decision", _ZH_DECISION),
        ("plan", _JA_PLAN),
        ("plan", _ZH_PLAN),
    ):
        cjk = pattern.match(sentence)
        if cjk:
            what = cjk.group("what")[:12].rstrip(_PARTICLES)
            said = _cjk_said_of(sentence, who)
            if kind == "plan" and who and _CJK_I.match(sentence):  # 私は/我: their own plan
                return Statement("event", f"{who.casefold()} plans {what}", said)
            return Statement(kind, f"{kind}: {what}", said)
    if who and (own := _own_plan(sentence, who) or _cjk_event(sentence, who)):
        return own
    event = _EVENT.match(sentence)
    if event and who:
        verb = (event.group("verb") or event.group("doing")).casefold()
        key = key_words(event.group("rest"))
        if key:  # "Yesterday I went to X" is kept as "Yesterday Caroline went to X"
            start, end = event.span("who")
            mine = event.group("who").casefold() == "i"
            name = who if mine else f"{who} and others"
            rest = sentence[end:]
            if re.match(r"['’]ve\b", rest):  # "I've been running" is "Melanie has been running"
                rest = (" has" if mine else " have") + rest[3:]
            said = sentence[:start] + name + said_of_them(rest)
            return Statement("event", f"{who.casefold()} {verb} {key}", said)
    return None


def _own_plan(sentence: str, who: str) -> Statement | None:
    """ "Next week I'm flying to Osaka" as "Next week Dana is flying to Osaka"."""
    found = _OWN_PLAN.match(sentence)
    if found is None or (found["later"] and not _LATER.search(sentence)):
        return None
    key = key_words(found["rest"])
    if not key:
        return None
    aux = " ".join((found["plan"] or found["later"]).replace("’", "'").split())
    if aux.startswith(("'m", "am")):
        aux = "is" + aux.removeprefix("'m").removeprefix("am")
    elif aux in {"'ll", "will"}:
        aux = "will"
    else:  # "plan to", "intend to"
        verb, _, tail = aux.partition(" ")
        aux = f"{verb}s {tail}"
    said = f"{found['lead']}{who} {aux} {said_of_them(found['rest'])}"
    return Statement("event", f"{who.casefold()} plans {key}", said)


# "I" alone, not "we": 私は, 僕は, 我 (not 我们).
_CJK_I = re.compile(r"^(?:(?:私|わたし|僕|俺)(?!たち)(?:は|も)?、?|我(?!们))")


def _cjk_said_of(sentence: str, who: str) -> str:
    """「私は来週…」 as 「Danaは来週…」, 「我下周…」 as 「Dana下周…」 (as "I" is "Dana")."""
    found = _CJK_I.match(sentence)
    if not who or found is None:
        return sentence
    particle = "" if sentence.startswith("我") else "は"
    return f"{who}{particle}{sentence[found.end() :]}"


def _cjk_event(sentence: str, who: str) -> Statement | None:
    """「私は先週京都に行きました」 as 「Danaは先週京都に行きました」; 「我上周去了上海」 as
    「Dana上周去了上海」."""
    ja = _JA_EVENT.match(sentence)
    if ja and (ja["me"] or ja["when"]):
        said = _cjk_said_of(sentence, who) if ja["me"] else f"{who}は{sentence}"
        return Statement("event", f"{who.casefold()} {ja['what'][:12]}", said)
    zh = _ZH_EVENT.match(sentence)
    if zh and zh["when"]:
        return Statement(
            "event", f"{who.casefold()} {zh['what'][:12]}", _cjk_said_of(sentence, who)
        )
    return None
