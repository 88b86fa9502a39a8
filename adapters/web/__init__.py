"""The built-in web platform: a chat page at `/`, SSE chat, and web channels."""

from adapters.web.adapter import WebAdapter

__all__ = ["WebAdapter"]
