"""Which index the hub opens: a Qdrant server's when a URL is configured, else the one
embedded in the hub process. Apart from the interface (hub/memory/index.py), which both
engines build on and so cannot import them."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from hub.memory.index import DEFAULT_COLLECTION, VectorIndex
from hub.memory.index_edge import EdgeIndex

log = logging.getLogger(__name__)


def open_index(
    path: Path | None, url: str | None, collection: str = DEFAULT_COLLECTION
) -> VectorIndex:
    """A server index when `url` is given (":memory:" for qdrant-client's local mode),
    else an embedded Edge index in directory `path` (`open_edge`)."""
    if url is not None:
        # Imported here: qdrant-client is only loaded by a hub configured for a server.
        from qdrant_client import QdrantClient

        from hub.memory.index_server import ServerIndex

        client = QdrantClient(":memory:") if url == ":memory:" else QdrantClient(url=url)
        return ServerIndex(client, collection)
    if path is None:
        raise ValueError("an index needs a directory (Edge) or a URL (Qdrant server)")
    return open_edge(path)


def open_edge(path: Path) -> VectorIndex:
    """The embedded index; a shard that cannot be opened is set aside and started afresh
    (the markdown is the truth, and `MemoryService.start` rebuilds from it)."""
    try:
        return EdgeIndex(path)
    except Exception as exc:  # noqa: BLE001 - qdrant_edge raises bare Exception on a bad shard
        aside = path.with_name(f"{path.name}.broken-{datetime.now(UTC):%Y%m%d%H%M%S}")
        log.error("memory index at %s cannot be opened (%s); moved to %s", path, exc, aside)
        path.rename(aside)
        return EdgeIndex(path)
