"""The built-in web platform: a chat page at `/`, SSE chat, and web channels.

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[web]` settings model, and the adapter module, with FastAPI and the chat page, is
imported when `[web] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.web.settings import WebSettings
from hub.adapter import Adapter, AdapterPlugin, Settings

if TYPE_CHECKING:
    from adapters.web.adapter import WebAdapter


def build(settings: Settings) -> Adapter | None:
    """The adapter, or None when `[web]` is not enabled (its module is then not imported)."""
    if not settings.platform("web", WebSettings).enabled:
        return None
    from adapters.web.adapter import WebAdapter

    return WebAdapter.from_settings(settings)


def __getattr__(attribute: str) -> Any:
    """`from adapters.web import WebAdapter` still works, importing the adapter then."""
    if attribute == "WebAdapter":
        from adapters.web.adapter import WebAdapter

        return WebAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=WebSettings, build=build)

__all__ = ["PLUGIN", "WebAdapter", "WebSettings", "build"]
