"""The built-in web platform: a chat page at `/`, SSE chat, and web channels.

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[web]` settings model, and the adapter module, with FastAPI and the chat page, is
imported when `[web] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.web.settings import WebSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.web.adapter import WebAdapter


def build(section: WebSettings) -> Adapter:
    """The adapter, built when `[web]` is enabled: its module is imported only then."""
    from adapters.web.adapter import WebAdapter

    return WebAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.web import WebAdapter` still works, importing the adapter then."""
    if attribute == "WebAdapter":
        from adapters.web.adapter import WebAdapter

        return WebAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=WebSettings, build=build)

__all__ = ["PLUGIN", "WebAdapter", "WebSettings", "build"]
