"""/docs (Swagger UI) and /redoc, served from the hub itself: FastAPI's own pages load their
scripts from a CDN, so with no internet they were blank. The assets are the ones the
`fastapi-offline` package ships (Swagger UI 5, ReDoc 2); the pages are FastAPI's."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

DOCS, REDOC, OAUTH2_REDIRECT = "/docs", "/redoc", "/docs/oauth2-redirect"
ASSETS = "/docs-assets"
PATHS = (DOCS, REDOC, OAUTH2_REDIRECT)  # the pages that get the docs' own CSP (guard.py)
_STATIC = Path(fastapi_offline.__file__).parent / "static"


# ReDoc's footer shows a logo from Redocly's CDN: the one address it loads from outside,
# which the docs' CSP refuses (a console error), so its bundle is served with our icon.
_REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def _redoc_bundle() -> bytes:
    text = (_STATIC / "redoc.standalone.js").read_text(encoding="utf-8")
    return text.replace(_REDOC_LOGO, f"{ASSETS}/favicon.png").encode()


def add(app: FastAPI) -> None:
    """The app must be built with docs_url=None and redoc_url=None."""
    bundle = _redoc_bundle()

    @app.get(f"{ASSETS}/redoc.standalone.js", include_in_schema=False)
    async def redoc_js() -> Response:
        return Response(bundle, media_type="text/javascript; charset=utf-8")

    app.mount(ASSETS, StaticFiles(directory=_STATIC), name="docs-assets")
    openapi = app.openapi_url or "/openapi.json"

    @app.get(DOCS, include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi,
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=OAUTH2_REDIRECT,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
        )

    @app.get(OAUTH2_REDIRECT, include_in_schema=False)
    async def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(REDOC, include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
