"""The built-in web platform: a chat page at `/`, SSE chat, and web channels."""

from adapters.web.adapter import WebAdapter
from adapters.web.settings import WebSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=WebSettings, build=WebAdapter.from_settings)

__all__ = ["PLUGIN", "WebAdapter", "WebSettings"]
