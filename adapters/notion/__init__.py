"""Notion: reports published as pages of one data source (docs/platforms/notion.md).

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[notion]` settings model, and the adapter module, with notion-client, is
imported when `[notion] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.notion.settings import NotionSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.notion.adapter import NotionAdapter


def build(section: NotionSettings) -> Adapter:
    """The adapter, built when `[notion]` is enabled: its module is imported only then."""
    from adapters.notion.adapter import NotionAdapter

    return NotionAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.notion import NotionAdapter` still works, importing the adapter then."""
    if attribute == "NotionAdapter":
        from adapters.notion.adapter import NotionAdapter

        return NotionAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=NotionSettings, build=build)

__all__ = ["PLUGIN", "NotionAdapter", "NotionSettings", "build"]
