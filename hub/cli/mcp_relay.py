"""`animahub mcp NAME` (hub/cli/mcp.py): an Anima's memory for an MCP client over stdio
(docs/mcp.md).

It relays every request to the hub's own /mcp endpoint (hub/api/mcp_server.py): the running
hub's if there is one, else an in-process hub for as long as the client stays, so the tools,
their rights and their answers are the same on both transports. It authenticates as the
config's admin token, the owner (the data folder's owner.key, hub/people/owner_key.py), or
`--token` / `ANIMAHUB_TOKEN` (a person's own token: then it sees what that person may see).
"""

from __future__ import annotations

from typing import Any

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from hub import __version__
from hub.cli.console import fail
from hub.cli.hub_api import cli_settings


async def relay(upstream: ClientSession, anima: str) -> Server[Any, Any]:
    """A stdio-side server whose tools are the upstream's, each call pinned to `anima`."""
    init = await upstream.initialize()
    server: Server[Any, Any] = Server(
        "animahub", version=__version__, instructions=init.instructions
    )

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[types.Tool]:
        return (await upstream.list_tools()).tools

    # The upstream validates the arguments, and says what failed.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await upstream.call_tool(name, {**arguments, "anima": anima})

    return server


async def serve(anima: str, token: str | None) -> None:
    from hub.cli.client import hub_client, refusal

    async with hub_client(cli_settings()) as http:
        if token:
            http.headers["Authorization"] = f"Bearer {token}"
        # Asked first: refused inside the MCP session, it was a page of traceback.
        me = await http.get("/api/me")
        if me.status_code != 200:
            whose = "the token" if token else "this command"
            raise fail(f"the hub refused {whose}: {refusal(me)} (HTTP {me.status_code})")
        url = f"{str(http.base_url).rstrip('/')}/mcp"
        async with (
            streamable_http_client(url, http_client=http) as (read, write, _session_id),
            ClientSession(read, write) as upstream,
        ):
            server = await relay(upstream, anima)
            async with stdio_server() as (stdin, stdout):
                await server.run(stdin, stdout, server.create_initialization_options())
