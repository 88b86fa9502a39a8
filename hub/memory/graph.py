"""The [[wikilink]] graph over an Anima's knowledge, procedures and skills.

Recall adds the neighbours of what it found, up to two hops, ranked by personalized
PageRank from those seeds: what is linked from many relevant notes ranks above what one
distant note mentions. The walk runs on that two-hop neighbourhood only (a few dozen
nodes, or a few thousand around a hub), so a short numpy power iteration here replaces
networkx, whose pagerank needs SciPy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from hub.memory.documents import LAYER_DIRS, MemoryItem, read_item
from hub.memory.sharing import audience
from hub.memory.slugs import slug

WIKILINK = re.compile(r"\[\[([^\]|#\n]+)(?:[|#][^\]\n]*)?\]\]")
DAMPING = 0.85  # PageRank's usual damping: 15% of the walk restarts at the seeds


def links_of(item: MemoryItem) -> set[str]:
    """Slugs an item links to, from its text and its front matter `links`."""
    found = {slug(m.group(1)) for m in WIKILINK.finditer(item.text)}
    return {s for s in found | {slug(link) for link in item.links} if s}


def note_aliases(items: Iterable[MemoryItem]) -> dict[str, str]:
    """What a [[wikilink]] may name each note by (the slug of its file name, else of its
    title), to the note's path: how a link is resolved."""
    aliases: dict[str, str] = {}
    for item in items:
        aliases[slug(Path(item.path).stem)] = item.path
        if item.title:
            aliases.setdefault(slug(item.title), item.path)
    return aliases


class KnowledgeGraph:
    def __init__(self, items: Iterable[MemoryItem]) -> None:
        self.items: dict[str, MemoryItem] = {item.path: item for item in items}
        aliases = note_aliases(self.items.values())
        self.edges: dict[str, set[str]] = {path: set() for path in self.items}
        for path, item in self.items.items():
            for target in links_of(item):
                other = aliases.get(target)
                if other is not None and other != path:  # links count both ways
                    self.edges[path].add(other)
                    self.edges[other].add(path)

    @classmethod
    def load(cls, folder: Path) -> KnowledgeGraph:
        paths = (p for name in LAYER_DIRS.values() for p in sorted((folder / name).glob("**/*.md")))
        return cls(read_item(folder, path) for path in paths)

    def neighbours(
        self,
        seeds: Iterable[str],
        allowed_scopes: tuple[str, ...] | None,
        limit: int = 5,
        hops: int = 2,
    ) -> list[tuple[MemoryItem, float]]:
        """Items within `hops` of the seed paths, not seeds themselves, by personalized
        PageRank; only items whose scope the asker may see."""
        start = [s for s in dict.fromkeys(seeds) if s in self.edges]
        if not start:
            return []
        near: set[str] = set(start)
        frontier = set(start)
        for _ in range(hops):
            frontier = {n for f in frontier for n in self.edges[f]} - near
            near |= frontier
        if len(near) == len(start):
            return []
        sub = {node: self.edges[node] & near for node in near}
        ranks = personalized_pagerank(sub, start)
        ranked = sorted((p for p in near if p not in start), key=lambda p: -ranks[p])
        visible = [
            p
            for p in ranked
            if allowed_scopes is None or audience(self.items[p].scope) in allowed_scopes
        ]
        return [(self.items[p], ranks[p]) for p in visible[:limit]]


def personalized_pagerank(
    edges: Mapping[str, set[str]], seeds: list[str], iterations: int = 50, tol: float = 1e-9
) -> dict[str, float]:
    """PageRank whose random walk restarts at the seeds; dangling nodes return to them.

    Vectorized over an edge list: a hub note can put thousands of nodes within two hops,
    where a dict-based walk cost 14 ms per priming at 100,000 items (bench/priming_latency.py).
    """
    nodes = list(edges)
    index = {node: i for i, node in enumerate(nodes)}
    src = np.array([index[a] for a in nodes for _ in edges[a]], dtype=np.int64)
    dst = np.array([index[b] for a in nodes for b in edges[a]], dtype=np.int64)
    degree = np.bincount(src, minlength=len(nodes)).astype(np.float64)
    share = DAMPING / degree[src] if len(src) else np.zeros(0)
    restart = np.zeros(len(nodes))
    restart[[index[s] for s in seeds]] = 1.0 / len(seeds)
    dangling = degree == 0
    rank = restart.copy()
    for _ in range(iterations):
        nxt = (1 - DAMPING) * restart + np.bincount(
            dst, weights=rank[src] * share, minlength=len(nodes)
        )
        nxt += DAMPING * rank[dangling].sum() * restart
        delta = float(np.abs(nxt - rank).sum())
        rank = nxt
        if delta < tol:
            break
    return {node: float(rank[i]) for i, node in enumerate(nodes)}
