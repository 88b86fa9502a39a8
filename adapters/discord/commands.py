"""Slash commands: `/anima …` and `/whoami` as Discord application commands.

Discord shows them as typed commands; the hub has one command handler for every platform,
which reads `Inbound.command`. So each command is only registered here (and synced at start);
an invocation, whether it arrives over the gateway or at the HTTP interactions endpoint, is
read from its raw `data` into `Command(name, args)` and the text `/anima bind aria`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import discord
from discord import app_commands

from adapters.discord.normalize import PLATFORM, address_of, address_of_raw
from hub.messages import Address, AddressKind, Command, Inbound, PlatformUser

EPHEMERAL = 1 << 6  # message flag: only the invoking person sees the answer
NO_REPLY = "Received."  # what a command is answered with when the hub has nothing to say
_MAX_REPLY = 2000
_GROUP_TYPES = (1, 2)  # SUB_COMMAND, SUB_COMMAND_GROUP

# name, description, whether it takes an Anima's name
ANIMA_SUBCOMMANDS: tuple[tuple[str, str, bool], ...] = (
    ("list", "List the Animas of this hub", False),
    ("status", "Show what an Anima is doing", True),
    ("bind", "Let an Anima answer in this channel", True),
    ("unbind", "Remove this channel's Anima", False),
    ("heartbeat", "Run an Anima's heartbeat now", True),
    ("pause", "Pause an Anima", True),
    ("resume", "Resume a paused Anima", True),
)
WHOAMI = ("whoami", "Show who the hub thinks you are")

OnCommand = Callable[[discord.Interaction], Awaitable[None]]


def build_tree(client: discord.Client, on_command: OnCommand) -> app_commands.CommandTree:
    """The command tree discord.py syncs (`PUT /applications/{id}/commands`) and routes
    gateway interactions through; every command ends in `on_command`."""
    tree: app_commands.CommandTree = app_commands.CommandTree(client)
    group = app_commands.Group(name="anima", description="The Animas of this hub")
    for name, description, takes_name in ANIMA_SUBCOMMANDS:
        group.add_command(_command(name, description, takes_name, on_command))
    tree.add_command(group)
    tree.add_command(_command(*WHOAMI, False, on_command))
    return tree


def _command(
    name: str, description: str, takes_name: bool, on_command: OnCommand
) -> app_commands.Command[Any, Any, None]:
    # discord.py derives the options from the callback's parameters: `name: str` is the
    # Anima's name. The value itself is read from the raw interaction data, like HTTP.
    async def with_name(interaction: discord.Interaction, name: str) -> None:
        await on_command(interaction)

    async def plain(interaction: discord.Interaction) -> None:
        await on_command(interaction)

    if takes_name:
        callback: Any = app_commands.describe(name="The Anima's name")(with_name)
    else:
        callback = plain
    return app_commands.Command(name=name, description=description, callback=callback)


def command_of(data: Mapping[str, Any]) -> Command:
    """`{"name": "anima", "options": [{"name": "bind", "type": 1, "options": [{"name":
    "name", "value": "aria"}]}]}` -> Command("anima", ("bind", "aria"))."""
    return Command(str(data["name"]), tuple(_args(data.get("options") or ())))


def _args(options: Sequence[Mapping[str, Any]]) -> list[str]:
    args: list[str] = []
    for option in options:
        if not isinstance(option, Mapping):  # documented as TypeError for http_inbound
            raise TypeError(f"a command option is an object, not {type(option).__name__}")
        if option.get("type") in _GROUP_TYPES:
            args.append(str(option["name"]))
            args.extend(_args(option.get("options") or ()))
        else:
            args.append(str(option.get("value", "")))
    return args


def command_text(command: Command) -> str:
    return "/" + " ".join((command.name, *command.args))


def reply_text(reply: str | None) -> str:
    text = reply or NO_REPLY
    return text if len(text) <= _MAX_REPLY else text[: _MAX_REPLY - 1] + "…"


def _inbound(interaction_id: object, address: Address, sender: PlatformUser, data: Any) -> Inbound:
    command = command_of(data)
    return Inbound(
        event_id=f"interaction:{interaction_id}",
        address=address,
        sender=sender,
        text=command_text(command),
        command=command,
        raw={"interaction_id": str(interaction_id), "data": dict(data)},
    )


def gateway_inbound(interaction: discord.Interaction) -> Inbound:
    """An application command that arrived over the gateway."""
    guild_id = interaction.guild_id
    address = address_of(interaction.channel, guild_id)
    if address is None:  # a channel discord.py does not know the kind of
        kind = AddressKind.CHANNEL if guild_id else AddressKind.DM
        workspace = str(guild_id) if guild_id else "@me"
        address = Address(PLATFORM, workspace, str(interaction.channel_id), None, kind)
    user = interaction.user
    sender = PlatformUser(PLATFORM, str(user.id), user.display_name, user.bot)
    return _inbound(interaction.id, address, sender, interaction.data or {})


def http_inbound(payload: Mapping[str, Any]) -> Inbound:
    """An application command that arrived at the HTTP interactions endpoint (raw JSON).
    Raises KeyError, TypeError or ValueError on a malformed payload."""
    guild_id = payload.get("guild_id")
    channel = payload.get("channel") or {
        "id": payload["channel_id"],
        "type": 0 if guild_id else 1,
    }
    member = payload.get("member") or {}
    user = (member.get("user") if isinstance(member, Mapping) else None) or payload["user"]
    if not isinstance(user, Mapping):
        raise TypeError(f"an interaction's user is an object, not {type(user).__name__}")
    name = user.get("global_name") or user["username"]
    sender = PlatformUser(PLATFORM, str(user["id"]), str(name), bool(user.get("bot", False)))
    return _inbound(payload["id"], address_of_raw(channel, guild_id), sender, payload["data"])
