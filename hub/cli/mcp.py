"""`animahub mcp NAME`: an Anima's memory for an MCP client over stdio (docs/mcp.md).

The relay itself is hub/cli/mcp_relay.py, imported when the command runs: the MCP SDK is
heavy, and every other command (and `--help`) imports this module.
"""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import typer

from hub.cli.console import given, print_error
from hub.cli.hub_api import cli_settings
from hub.cli.memory import known_anima
from hub.cli.runfile import HubBusy


def mcp(
    name: Annotated[
        str, typer.Argument(help="The Anima whose memory the client uses.", callback=given)
    ],
    token: Annotated[
        str | None,
        typer.Option(help="A person's API token (`animahub token create`); or ANIMAHUB_TOKEN."),
    ] = None,
) -> None:
    """Serve an Anima's memory to an MCP client over stdio (Claude Code, Codex, Cursor)."""
    known_anima(cli_settings(), name)
    from hub.cli.mcp_relay import serve

    try:
        asyncio.run(serve(name, token or os.environ.get("ANIMAHUB_TOKEN")))
    except HubBusy as exc:
        print_error(str(exc))
        raise typer.Exit(1) from None
