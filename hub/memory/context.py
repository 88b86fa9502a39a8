"""What an episode is embedded with: the section itself, then the sections just before it.

A turn alone is often not enough to find it again: "Yes, last Saturday!" only answers a
question about the support group because of the turn before it. So the dense vector of an
episodic item is made from its own text followed by up to `CONTEXT_SECTIONS` earlier sections
of the same episode file, of the same conversation and privacy scope (never another
conversation's, never a more private scope's). The item's text, its lexical vector and
everything recall shows stay the section alone.

Measured on LoCoMo (bench/README.md): dense recall@10 0.592 → 0.710, hybrid 0.723 → 0.806.
The section comes first so a long context is what the embedder's input limit cuts, not it.

A note (knowledge, a procedure, a skill) is indexed with its title first when the title says
what its text does not (`indexed_text`): "How to release" over steps that never say "release".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hub.memory.documents import Layer, MemoryItem
from hub.memory.lexical import tokenize

CONTEXT_SECTIONS = 2
# Part of the index's model id: vectors made another way are rebuilt, never mixed.
# ("p": points record their previous section, which older indexes lack.)
PASSAGE_FORMAT = f"ctx{CONTEXT_SECTIONS}p"

FileItems = Callable[[str], Sequence[MemoryItem]]


def passage_texts(items: Sequence[MemoryItem], file_items: FileItems, limit: int) -> list[str]:
    """The text to embed for each item, each at most `limit` characters."""
    return [passage_text(item, file_items, limit) for item in items]


def passage_text(item: MemoryItem, file_items: FileItems, limit: int) -> str:
    if item.layer is not Layer.EPISODIC:
        return indexed_text(item)[:limit]
    earlier = earlier_sections(item, file_items(item.path))
    return "\n".join([item.text, *(other.text for other in earlier)])[:limit]


def previous_id(item: MemoryItem, file_items: FileItems) -> str | None:
    """The section just before an episodic item in its conversation: what its vector was
    partly made of, so a hit on the item lifts it too (hub/memory/lifts.py)."""
    if item.layer is not Layer.EPISODIC:
        return None
    earlier = earlier_sections(item, file_items(item.path), 1)
    return earlier[0].id if earlier else None


def earlier_sections(
    item: MemoryItem, in_file: Sequence[MemoryItem], most: int = CONTEXT_SECTIONS
) -> list[MemoryItem]:
    """Up to `most` sections before `item` in its file and conversation, nearest first."""
    position = next((n for n, other in enumerate(in_file) if other.id == item.id), None)
    if position is None:
        return []
    found: list[MemoryItem] = []
    for other in reversed(in_file[:position]):
        if len(found) == most:
            break
        if other.scope == item.scope and other.channel == item.channel:
            found.append(other)
    return found


_TITLED = (Layer.SEMANTIC, Layer.PROCEDURAL, Layer.SKILL)


def indexed_text(item: MemoryItem) -> str:
    """The text the index matches, embeds and shows for an item: a note's bold title and then
    its text, when the title holds a search term the text lacks; else the text."""
    if item.layer not in _TITLED or not item.title:
        return item.text
    if set(tokenize(item.title)) <= set(tokenize(item.text)):
        return item.text
    return f"**{item.title}**\n{item.text}"
