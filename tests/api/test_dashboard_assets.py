"""The dashboard's page and libraries come from the hub itself: every script, stylesheet
and library the page names is same-origin and loads, and the vendored files are exactly
the versions scripts/vendor pins (their checksums, written when they were fetched)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx

from hub.api.dashboard_page import STATIC

ROOT = Path(__file__).resolve().parents[2]
VENDOR = STATIC / "vendor"


async def test_the_page_and_everything_it_names_load_from_the_hub(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/dashboard")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    named = re.findall(r'(?:src|href)="([^"#]+)"', page.text)
    assets = [url for url in named if url.startswith("/dashboard-assets/")]
    # The stylesheet, two libraries, the markdown renderer (shared with the web chat) and
    # the page's script.
    assert len(assets) == 5, named
    assert all(url.startswith(("/", "data:")) for url in named), named  # nothing elsewhere
    for url in assets:
        loaded = await client.get(url)
        assert loaded.status_code == 200 and len(loaded.content) > 1000, url


def test_the_vendored_libraries_are_the_pinned_releases() -> None:
    lines = (VENDOR / "SHA256SUMS").read_text().splitlines()
    sums = {name: digest for digest, name in (line.split() for line in lines)}
    assert set(sums) == {"chart.umd.min.js", "cytoscape.min.js"}
    for name, digest in sums.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    lock = json.loads((ROOT / "scripts" / "vendor" / "package-lock.json").read_text())
    versions = {
        path.removeprefix("node_modules/"): entry["version"]
        for path, entry in lock["packages"].items()
        if path
    }
    head = {name: (VENDOR / name).read_text()[:400] for name in sums}
    assert f"Chart.js v{versions['chart.js']}" in head["chart.umd.min.js"]
    licenses = (VENDOR / "LICENSES.txt").read_text()
    assert f"chart.js {versions['chart.js']}" in licenses
    assert f"cytoscape {versions['cytoscape']}" in licenses
