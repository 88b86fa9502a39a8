"""`[web]`: the built-in web chat and its channels."""

from __future__ import annotations

from pydantic import Field

from hub.adapter import PlatformSection


class WebSettings(PlatformSection):
    enabled: bool = True
    workspace: str = "local"
    channels: list[str] = Field(default_factory=lambda: ["general"])
