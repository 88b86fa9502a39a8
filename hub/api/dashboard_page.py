"""The dashboard's page and assets: one HTML file, its script and stylesheet, and the
front-end libraries it draws with (Chart.js, Cytoscape.js), all served by the hub itself
(`hub/api/static/vendor`, refreshed by scripts/vendor/update.sh), never from a CDN.

The page holds no data: everything it shows comes from /api/* and `WS /ws`, which apply
the caller's rights, so the page itself needs no credential."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
PAGE = "/dashboard"
ASSETS = "/dashboard-assets"


def add(app: FastAPI) -> None:
    async def page() -> FileResponse:
        return FileResponse(STATIC / "dashboard.html")

    app.add_api_route(PAGE, page, methods=["GET"], include_in_schema=False)
    app.mount(ASSETS, StaticFiles(directory=STATIC), name="dashboard-assets")
