"""What a start leaves for later (issue 47): the hub answers before its embedder has warmed
up, and a hub with a model configured starts its model worker (litellm, ~200 MB) with the
first model call, not at start. Both took 2-3 s of every start on two cores, and the worker
stayed in memory in a hub nobody talked to."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from hub.api.server import create_app
from hub.app import Hub
from hub.memory.index_edge import EdgeIndex
from hub.memory.service import MemoryService
from hub.settings import MemorySection
from tests.api.test_chat_api import chat, sse_events
from tests.conftest import add_demo_animas, make_settings, owner_headers
from tests.memory.test_service import HashEmbedder

HANG_GUARD_S = 60  # not a measurement: only so that a start that waits fails, not hangs


class SlowEmbedder(HashEmbedder):
    """An embedder whose first query (the warm-up) waits until the test lets it go."""

    def __init__(self) -> None:
        super().__init__("slow")
        self.release = threading.Event()
        self.queries = 0

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        self.release.wait(HANG_GUARD_S)
        self.queries += 1
        return super().embed_queries(texts)


async def test_memory_starts_without_waiting_for_the_embedder_to_warm_up(tmp_path: Path) -> None:
    embedder = SlowEmbedder()
    service = MemoryService(tmp_path, MemorySection(), EdgeIndex(tmp_path / "index"), embedder)
    try:
        async with asyncio.timeout(HANG_GUARD_S / 2):
            await service.start(["aria"])  # returned while the warm-up still waits
        assert embedder.queries == 0
        embedder.release.set()
        await service.warmed()
        assert embedder.queries == 1  # the warm-up did run, off the loop
    finally:
        embedder.release.set()
        await service.stop()


async def test_the_model_worker_starts_with_the_first_model_call(
    home: Path, fake_openai: Any
) -> None:
    settings = make_settings(
        home,
        llm={"model": "openai/fake", "api_base": f"{fake_openai.url}/v1", "api_key": "x"},
    )
    assert settings.llm.workers == 1  # the default
    hub = Hub(settings)
    await hub.start()
    try:
        add_demo_animas(hub)
        workers = hub.model_workers
        assert workers is not None
        transport = httpx.ASGITransport(app=create_app(hub))
        headers = owner_headers(hub.settings.home)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://localhost", headers=headers
        ) as client:
            health = (await client.get("/api/system/health")).json()
            assert not workers.started and workers.pids() == []
            assert health["model_workers"] == {"configured": 1, "running": 0, "ready": 0}
            fake_openai.queue_reply("Hello from the model.")
            response = await chat(client, "aria", message="hello?")
            assert "".join(e.get("text", "") for e in sse_events(response.text)) == (
                "Hello from the model."
            )
            health = (await client.get("/api/system/health")).json()
        assert workers.started and len(workers.pids()) == 1
        assert health["model_workers"] == {"configured": 1, "running": 1, "ready": 1}
    finally:
        await hub.stop()
