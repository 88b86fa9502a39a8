"""Builds the FastAPI app around a Hub: auth, errors, lifespan, routes."""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError

from hub import __version__
from hub.adapter import MessageTooLarge
from hub.animas import AnimaError
from hub.api import memory_routes, routes
from hub.app import Hub

log = logging.getLogger(__name__)
_MAX_BODY = 1024 * 1024  # whole request bodies; message text has its own, smaller limit


def create_app(hub: Hub) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    app = FastAPI(
        title="AnimaHub",
        version=__version__,
        lifespan=lifespan,
        description="REST API of an AnimaHub: Animas, chat, channels, system health.",
    )
    app.state.hub = hub
    token = hub.settings.server.api_token

    @app.middleware("http")
    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > _MAX_BODY:
            return JSONResponse({"detail": "request body too large"}, status_code=413)
        if token is not None and request.url.path.startswith("/api/"):
            given = request.headers.get("authorization", "")
            expected = f"Bearer {token.get_secret_value()}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return JSONResponse(
                    {"detail": "missing or wrong bearer token"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)

    @app.exception_handler(MessageTooLarge)
    async def too_large(_request: Request, exc: MessageTooLarge) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=413)

    @app.exception_handler(DBAPIError)
    async def no_database(_request: Request, exc: DBAPIError) -> JSONResponse:
        # Nothing was accepted: the client (or the platform, which redelivers) sends again.
        log.error("request failed: the database is unavailable (%s)", exc.orig)
        return JSONResponse(
            {"detail": "the hub's database is unavailable; nothing was stored, try again"},
            status_code=503,
            headers={"Retry-After": "5"},
        )

    @app.exception_handler(AnimaError)
    async def bad_anima(_request: Request, exc: AnimaError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    app.include_router(routes.router)
    app.include_router(memory_routes.router)
    for adapter in hub.adapters.values():
        for router in adapter.routers():
            app.include_router(router)
    return app
