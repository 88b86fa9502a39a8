"""POST /api/memory/{name}/write (hub/memory/service.py) with any content and path, on a
running hub: a 200 and the file holds the (redacted) content, or a 400 and the old file is
exactly as it was; never a server error, never a file that cannot be read back."""

from __future__ import annotations

from pathlib import Path

import httpx
from hypothesis import event as event_kind
from hypothesis import example, given
from hypothesis import strategies as st

from hub.app import Hub
from hub.redaction.redact import redact
from tests.fuzz.strategies import examples, nasty_text
from tests.fuzz.test_front_matter import written_file

OLD = "---\ntitle: Deploys\n---\nWe deploy on Tuesdays.\n"
paths = st.one_of(
    st.sampled_from(
        [
            "knowledge/deploys.md",
            "episodes/2025-01-02.md",
            "skills/x.md",
            "procedures/p.md",
            "knowledge/new.md",
            "identity.md",
            "../x.md",
        ]
    ),
    nasty_text(20).map(lambda s: f"knowledge/{s}.md"),
)


@examples(ci=15, full=1_000, fixture=True)
@given(path=paths, content=written_file)
# Each of these replaced the file, then raised (MemoryFileError, YAMLError): a 500, and the
# old note was gone.
@example(path="knowledge/deploys.md", content="---\nimportance: high\n---\nx")
@example(path="knowledge/deploys.md", content="---\n: :\n---\nx")
@example(path="episodes/2025-01-02.md", content="## 09:30\n<!-- memory: {x} -->\nx")
async def test_a_write_replaces_the_file_whole_or_not_at_all(
    client: httpx.AsyncClient, hub: Hub, path: str, content: str
) -> None:
    folder = hub.settings.home / "animas" / "aria"
    old = folder / "knowledge" / "deploys.md"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text(OLD, encoding="utf-8")
    target = folder / path
    before = target.read_bytes() if target.is_file() else None
    response = await client.post("/api/memory/aria/write", json={"path": path, "content": content})
    event_kind(f"status {response.status_code}")
    assert response.status_code in (200, 400), response.text[:300]
    if response.status_code == 200:
        assert target.read_bytes().decode("utf-8") == redact(content)[0]
    elif Path(path).parts[0] != "..":
        assert (target.read_bytes() if target.is_file() else None) == before
