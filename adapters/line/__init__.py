"""LINE: one Messaging API channel through line-bot-sdk v3 (docs/platforms/line.md).

This package's entry point (`PLUGIN`) is read whenever settings load, by every CLI command:
it names only the `[line]` settings model, and the adapter module, with line-bot-sdk, is
imported when `[line] enabled` (docs/architecture.md, "Boundaries").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.line.settings import LineSettings
from hub.adapter import Adapter, AdapterPlugin

if TYPE_CHECKING:
    from adapters.line.adapter import LineAdapter


def build(section: LineSettings) -> Adapter:
    """The adapter, built when `[line]` is enabled: its module is imported only then."""
    from adapters.line.adapter import LineAdapter

    return LineAdapter(section)


def __getattr__(attribute: str) -> Any:
    """`from adapters.line import LineAdapter` still works, importing the adapter then."""
    if attribute == "LineAdapter":
        from adapters.line.adapter import LineAdapter

        return LineAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


PLUGIN = AdapterPlugin(settings=LineSettings, build=build)

__all__ = ["PLUGIN", "LineAdapter", "LineSettings", "build"]
