"""What the platforms show after a run, judged per conversation: every message has exactly
one reply, the replies come in the order of the messages, each references its message
where the platform can, and the bot posted nothing else (a preview left behind by a crash,
never turned into the reply, is something else).

One double is told apart: a reply the hub sent again on Telegram because a kill fell while
it was being sent (`resent_blind`). Telegram has no idempotency key and no way to ask what
a bot posted, so such a reply may show twice; the hub logs each one, and only a double it
logged so is counted there instead of as `doubled`."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from tests.reliability.conversations import (
    TAG,
    Conversation,
    DiscordChat,
    Reply,
    SlackThread,
    TelegramChat,
)

PREVIEW_END = "…"  # a streamed preview ends so until the reply's final text replaces it


@dataclass
class Verdict:
    messages: int = 0
    replies: int = 0
    missing: list[str] = field(default_factory=list)  # tags without a reply
    doubled: list[str] = field(default_factory=list)  # tags with more than one
    resent_blind: list[str] = field(default_factory=list)  # Telegram: logged, see above
    strays: list[str] = field(default_factory=list)  # bot messages naming no message
    misordered: list[str] = field(default_factory=list)
    unreferenced: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        found = {
            "missing": self.missing,
            "doubled": self.doubled,
            "strays": self.strays,
            "misordered": self.misordered,
            "unreferenced": self.unreferenced,
        }
        return {name: items for name, items in found.items() if items}


def expected_reference(conv: Conversation, platform_id: str) -> str | None:
    """What a reply must reference on platforms where it can (None: only its text can)."""
    if isinstance(conv, SlackThread):
        return conv.root
    if isinstance(conv, DiscordChat):
        return platform_id
    if isinstance(conv, TelegramChat) and conv.group is not None:
        return platform_id
    return None


async def judge(convs: list[Conversation], resent: frozenset[str] = frozenset()) -> Verdict:
    """`resent`: the tags of the messages whose reply the hub logged it sent again blind."""
    verdict = Verdict()
    for conv in convs:
        judge_one(conv, await conv.replies(), verdict, resent)
    return verdict


_RESENT = re.compile(r"delivery (\S+) may have been sent before the stop; sending it again")


def resent_blind(home: Path) -> frozenset[str]:
    """The tags of the messages whose reply the hub's log says it sent again blind."""
    logged = "\n".join(p.read_text(errors="replace") for p in (home / "logs").glob("*.log*"))
    ids = set(_RESENT.findall(logged))
    if not ids:
        return frozenset()
    with sqlite3.connect(home / "hub.db") as db:
        marks = ",".join("?" * len(ids))
        rows = db.execute(
            "select inbox.text from delivery join inbox on inbox.id = delivery.inbox_id"
            f" where delivery.id in ({marks})",
            sorted(ids),
        ).fetchall()
    return frozenset(m.group(0) for (text,) in rows if (m := TAG.search(text)))


def judge_one(
    conv: Conversation, replies: list[Reply], verdict: Verdict, resent: frozenset[str]
) -> None:
    order = [s.tag for s in conv.sent]
    ids = {s.tag: s.platform_id for s in conv.sent}
    verdict.messages += len(order)
    verdict.replies += len(replies)
    seen: list[str] = []
    for reply in replies:
        label = reply.tag()
        if label is None or reply.text.rstrip().endswith(PREVIEW_END):
            verdict.strays.append(f"{conv.name}: {reply.text[:80]!r}")
            continue
        if label in seen:
            blind = isinstance(conv, TelegramChat) and label in resent
            (verdict.resent_blind if blind else verdict.doubled).append(f"{conv.name}: {label}")
            continue
        seen.append(label)
        wanted = expected_reference(conv, ids.get(label, ""))
        if wanted is not None and reply.references != wanted:
            verdict.unreferenced.append(f"{conv.name}: {label} -> {reply.references}")
    verdict.missing.extend(f"{conv.name}: {t}" for t in order if t not in seen)
    answered = [t for t in order if t in seen]
    if [t for t in seen if t in ids] != answered:
        verdict.misordered.append(f"{conv.name}: sent {answered}, answered {seen}")


async def all_answered(convs: list[Conversation]) -> bool:
    """Whether every message sent so far has a finished reply (not a preview)."""
    for conv in convs:
        done = {
            reply.tag()
            for reply in await conv.replies()
            if not reply.text.rstrip().endswith(PREVIEW_END)
        }
        if any(s.tag not in done for s in conv.sent):
            return False
    return True
