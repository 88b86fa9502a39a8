"""`[notion]`: the integration's token and the data source reports become pages of."""

from __future__ import annotations

from pydantic import SecretStr, model_validator

from hub.adapter import PlatformSection


class NotionSettings(PlatformSection):
    """An internal integration, with the database shared with it (docs/platforms/notion.md)."""

    # Settings > Connections > Develop or manage integrations > Internal integration secret.
    token: SecretStr | None = None
    # The API base; tests point it at animahub_kit/fakes/notion_server.py.
    api_url: str = "https://api.notion.com"
    # The database's data source (Notion API 2025-09-03): reports become its pages.
    data_source_id: str = ""
    timeout_s: float = 30.0

    @model_validator(mode="after")
    def _complete(self) -> NotionSettings:
        if self.enabled and self.token is None:
            raise ValueError("enabled needs token (set ANIMAHUB_NOTION__TOKEN)")
        if self.enabled and not self.data_source_id:
            raise ValueError("enabled needs data_source_id (the database's data source)")
        return self
