"""Slash commands: `/anima …`, `/whoami`, `/web`, `/link`, `/unlink`, `/forget-me` and
`/share` as Discord application commands.

Discord shows them as typed commands; the hub has one command handler for every platform,
which reads `Inbound.command`. So each command is only registered here (and synced at start);
an invocation, whether it arrives over the gateway or at the HTTP interactions endpoint, is
read from its raw `data` into `Command(name, args)` and the text `/anima bind aria`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import discord
from discord import app_commands

from adapters.discord.normalize import PLATFORM, THREAD_TYPES, address_of, address_of_raw
from hub.messages import Address, AddressKind, Command, Inbound, PlatformUser

EPHEMERAL = 1 << 6  # message flag: only the invoking person sees the answer
NO_REPLY = "Received."  # what a command is answered with when the hub has nothing to say
_MAX_REPLY = 2000
_GROUP_TYPES = (1, 2)  # SUB_COMMAND, SUB_COMMAND_GROUP
_SNOWFLAKE = re.compile(r"[0-9]{1,20}")
_COMMAND_NAME = re.compile(r"[-_\w]{1,32}")  # Discord's rule for command and option names

# name, description, whether it takes an Anima's name
ANIMA_SUBCOMMANDS: tuple[tuple[str, str, bool], ...] = (
    ("list", "List the Animas of this hub", False),
    ("status", "Show what an Anima is doing", True),
    ("bind", "Let an Anima answer in this channel", True),
    ("unbind", "Remove this channel's Anima", False),
    ("heartbeat", "Run an Anima's heartbeat now", True),
    ("pause", "Pause an Anima", True),
    ("resume", "Resume a paused Anima", True),
    ("tasks", "Show the open tasks of the task board", False),
)
WHOAMI = ("whoami", "Show who the hub thinks you are")
WEB = ("web", "A sign-in link to the web chat (in a DM)")

OnCommand = Callable[[discord.Interaction], Awaitable[None]]


def build_tree(client: discord.Client, on_command: OnCommand) -> app_commands.CommandTree:
    """The command tree discord.py syncs (`PUT /applications/{id}/commands`) and routes
    gateway interactions through; every command ends in `on_command`."""
    tree: app_commands.CommandTree = app_commands.CommandTree(client)
    group = app_commands.Group(name="anima", description="The Animas of this hub")
    for name, description, takes_name in ANIMA_SUBCOMMANDS:
        group.add_command(_command(name, description, takes_name, on_command))
    group.add_command(_approve(on_command))
    group.add_command(_delegate(on_command))
    tree.add_command(group)
    tree.add_command(_command(*WHOAMI, False, on_command))
    tree.add_command(_command(*WEB, False, on_command))
    tree.add_command(_link(on_command))
    tree.add_command(_unlink(on_command))
    tree.add_command(_forget_me(on_command))
    tree.add_command(_share(on_command))
    return tree


def _approve(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(code="The code the person was given, or the request's id")
    async def approve(interaction: discord.Interaction, code: str) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="approve", description="Let a stranger write to the Animas in a DM", callback=approve
    )


def _delegate(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(name="The Anima who does it", task="What to do, in a line")
    async def delegate(interaction: discord.Interaction, name: str, task: str) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="delegate", description="Give an Anima a task (admins)", callback=delegate
    )


def _forget_me(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(confirm="Type confirm to delete (none: see what would go)")
    async def forget_me(interaction: discord.Interaction, confirm: str | None = None) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="forget-me",
        description="Delete what the Animas keep private to you",
        callback=forget_me,
    )


def _share(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(text="What to share (none: your last message here)")
    async def share(interaction: discord.Interaction, text: str | None = None) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="share", description="Share what you said with the team", callback=share
    )


def _link(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(code="The code your other account was given (none: get a code)")
    async def link(interaction: discord.Interaction, code: str | None = None) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="link", description="Link your accounts on other platforms", callback=link
    )


def _unlink(on_command: OnCommand) -> app_commands.Command[Any, Any, None]:
    @app_commands.describe(platform="slack, discord, telegram, line or web")
    async def unlink(interaction: discord.Interaction, platform: str) -> None:
        await on_command(interaction)

    return app_commands.Command(
        name="unlink", description="Unlink your account on a platform", callback=unlink
    )


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
    "name", "value": "aria"}]}]}` -> Command("anima", ("bind", "aria")).
    Raises ValueError when `data` is not a command Discord would send."""
    data = _mapping(data, "data")
    return Command(_name(data.get("name")), tuple(_args(data.get("options"), depth=0)))


def _args(options: object, depth: int) -> list[str]:
    if options is None:
        return []
    if not isinstance(options, list) or depth > 2:  # Discord nests a group, then a command
        raise ValueError("command options are not a list of options")
    args: list[str] = []
    for option in options:
        option = _mapping(option, "a command option")
        if option.get("type") in _GROUP_TYPES:
            args.append(_name(option.get("name")))
            args.extend(_args(option.get("options"), depth + 1))
        else:
            value = option.get("value", "")
            if not isinstance(value, str | int | float):
                raise ValueError("a command option's value is not a scalar")
            args.append(str(value))
    return args


def _name(value: object) -> str:
    if not isinstance(value, str) or _COMMAND_NAME.fullmatch(value) is None:
        raise ValueError("not a command name")
    return value


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} is not an object")
    return value


def _snowflake(value: object, what: str) -> str:
    text = str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""
    if _SNOWFLAKE.fullmatch(text) is None:
        raise ValueError(f"{what} is not a snowflake")
    return text


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
    Raises ValueError on a payload Discord would not send: every id a snowflake, every
    object an object, so nothing malformed is stored."""
    payload = _mapping(payload, "the interaction")
    interaction_id = _snowflake(payload.get("id"), "id")
    guild = payload.get("guild_id")
    guild_id = _snowflake(guild, "guild_id") if guild is not None else None
    channel = _channel(payload, guild_id)
    member = payload.get("member")
    if member is not None:
        user = _mapping(_mapping(member, "member").get("user"), "member.user")
    else:
        user = _mapping(payload.get("user"), "user")
    name = user.get("global_name") or user.get("username")
    if not isinstance(name, str) or not name:
        raise ValueError("the user has no name")
    user_id = _snowflake(user.get("id"), "user.id")
    sender = PlatformUser(PLATFORM, user_id, name[:100], user.get("bot") is True)
    data = _mapping(payload.get("data"), "data")
    return _inbound(interaction_id, address_of_raw(channel, guild_id), sender, data)


def _channel(payload: Mapping[str, Any], guild_id: str | None) -> Mapping[str, Any]:
    raw = payload.get("channel")
    if raw is None:
        return {
            "id": _snowflake(payload.get("channel_id"), "channel_id"),
            "type": 0 if guild_id else 1,
        }
    channel = _mapping(raw, "channel")
    kind = channel.get("type", 0)
    if not isinstance(kind, int) or isinstance(kind, bool):
        raise ValueError("channel.type is not a number")
    parent = channel.get("parent_id")
    if kind in THREAD_TYPES and parent is None:
        raise ValueError("a thread without its parent_id")
    return {
        "id": _snowflake(channel.get("id"), "channel.id"),
        "type": kind,
        "parent_id": _snowflake(parent, "channel.parent_id") if parent is not None else None,
    }
