"""Notion: reports published as pages of one data source (docs/platforms/notion.md)."""

from adapters.notion.adapter import NotionAdapter
from adapters.notion.settings import NotionSettings
from hub.adapter import AdapterPlugin

PLUGIN = AdapterPlugin(settings=NotionSettings, build=NotionAdapter.from_settings)

__all__ = ["PLUGIN", "NotionAdapter", "NotionSettings"]
