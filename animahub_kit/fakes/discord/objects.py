"""The JSON objects the fake Discord answers and dispatches with, as API v10 shapes them.

Plain builders: values in, a fresh dict out. What the fake holds, and the snowflakes it
hands out, are animahub_kit/fakes/discord/state.py's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

JSON = dict[str, Any]
# the @everyone permissions of the test guild, and the app's in an interaction
PERMISSIONS = "2248473465835073"
THREAD_TYPES = (10, 11, 12)


def iso(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).isoformat()


def user(user_id: str, name: str, *, bot: bool = False) -> JSON:
    return {
        "id": user_id,
        "username": name,
        "global_name": None if bot else name.capitalize(),
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
        "flags": 0,
    }


def text_channel(channel_id: str, guild_id: str, name: str, position: int) -> JSON:
    return {
        "id": channel_id,
        "type": 0,
        "guild_id": guild_id,
        "name": name,
        "position": position,
        "permission_overwrites": [],
        "topic": None,
        "nsfw": False,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "parent_id": None,
        "flags": 0,
    }


def dm_channel(channel_id: str, recipient: JSON) -> JSON:
    return {
        "id": channel_id,
        "type": 1,
        "last_message_id": None,
        "recipients": [recipient],
        "flags": 0,
    }


def thread(thread_id: str, guild_id: str, parent_id: str, owner_id: str, name: str) -> JSON:
    """A public thread (type 11), just started."""
    return {
        "id": thread_id,
        "type": 11,
        "guild_id": guild_id,
        "parent_id": parent_id,
        "owner_id": owner_id,
        "name": name,
        "last_message_id": None,
        "rate_limit_per_user": 0,
        "message_count": 0,
        "member_count": 1,
        "total_message_sent": 0,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": iso(),
            "locked": False,
        },
    }


def member(user: JSON | None) -> JSON:
    member: JSON = {
        "roles": [],
        "joined_at": iso(),
        "deaf": False,
        "mute": False,
        "flags": 0,
        "nick": None,
        "avatar": None,
        "premium_since": None,
        "pending": False,
    }
    if user is not None:
        member["user"] = user
    return member


def attachment(attachment_id: str, filename: str, url: str, content_type: str, size: int) -> JSON:
    return {
        "id": attachment_id,
        "filename": filename,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
    }


def message(
    message_id: str,
    author: JSON,
    channel_id: str,
    content: str,
    *,
    mentions: tuple[JSON, ...],
    attachments: tuple[JSON, ...],
    guild_id: str | None,
) -> JSON:
    """A message without a reference; `guild_id` None: a DM, with no guild or member."""
    data: JSON = {
        "id": message_id,
        "channel_id": channel_id,
        "author": author,
        "content": content,
        "timestamp": iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": list(mentions),
        "mention_roles": [],
        "attachments": list(attachments),
        "embeds": [],
        "components": [],
        "pinned": False,
        "type": 0,
        "flags": 0,
    }
    if guild_id is not None:
        data["guild_id"] = guild_id
        data["member"] = member(None)
    return data


def refer(data: JSON, reference: str, referenced: JSON | None) -> None:
    """Make `data` a reply (type 19) to message `reference`; `referenced`: that message's
    data, when the fake knows it."""
    data["type"] = 19
    data["message_reference"] = {
        "type": 0,
        "message_id": reference,
        "channel_id": data["channel_id"],
        "guild_id": data.get("guild_id"),
    }
    if referenced is not None:
        data["referenced_message"] = referenced


def interaction(
    interaction_id: str,
    token_id: str,
    command_id: str,
    *,
    app_id: str,
    guild_id: str,
    channel: JSON,
    user: JSON,
    name: str,
    options: list[JSON],
) -> JSON:
    """An application command's interaction; `token_id` makes its token."""
    data: JSON = {
        "id": interaction_id,
        "application_id": app_id,
        "type": 2,
        "token": f"interaction-token-{token_id}",
        "version": 1,
        "data": {"id": command_id, "name": name, "type": 1, "options": options},
        "channel_id": channel["id"],
        "channel": channel,
        "app_permissions": PERMISSIONS,
        "locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": guild_id},
        "attachment_size_limit": 10_485_760,
    }
    if channel["type"] == 1:
        data.update(user=user, context=1)
    else:
        data.update(
            guild_id=guild_id,
            guild_locale="en-US",
            member={**member(user), "permissions": PERMISSIONS},
            context=0,
        )
    return data


def registered(command: JSON, app_id: str, command_id: str) -> JSON:
    """A command as Discord answers an overwrite with it."""
    return {
        "id": command_id,
        "application_id": app_id,
        "version": command_id,
        "type": command.get("type", 1),
        "name": command["name"],
        "description": command.get("description", ""),
        "options": command.get("options", []),
        "default_member_permissions": command.get("default_member_permissions"),
        "dm_permission": command.get("dm_permission", True),
        "nsfw": command.get("nsfw", False),
        "contexts": command.get("contexts"),
        "integration_types": command.get("integration_types", [0]),
    }


def application(app_id: str, bot: JSON, owner: JSON) -> JSON:
    return {
        "id": app_id,
        "name": bot["username"],
        "icon": None,
        "description": "",
        "summary": "",
        "bot_public": False,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "owner": owner,
        "flags": 0,
        "team": None,
        "bot": bot,
        "interactions_endpoint_url": None,
    }


def gateway_bot(url: str) -> JSON:
    return {
        "url": url,
        "shards": 1,
        "session_start_limit": {
            "total": 1000,
            "remaining": 999,
            "reset_after": 14_400_000,
            "max_concurrency": 1,
        },
    }


def ready(bot: JSON, guild_id: str, session_id: str, resume_url: str, app_id: str) -> JSON:
    return {
        "v": 10,
        "user": bot,
        "guilds": [{"id": guild_id, "unavailable": True}],
        "session_id": session_id,
        "resume_gateway_url": resume_url,
        "application": {"id": app_id, "flags": 0},
        "private_channels": [],
        "relationships": [],
        "presences": [],
        "user_settings": {},
        "geo_ordered_rtc_regions": [],
        "_trace": ["fake-discord"],
    }


def guild(guild_id: str, name: str, owner_id: str, bot: JSON, channels: list[JSON]) -> JSON:
    """GUILD_CREATE's guild: `channels` all of its channels, threads among them."""
    return {
        "id": guild_id,
        "name": name,
        "icon": None,
        "splash": None,
        "discovery_splash": None,
        "owner_id": owner_id,
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "roles": [
            {
                "id": guild_id,
                "name": "@everyone",
                "permissions": PERMISSIONS,
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
                "flags": 0,
            }
        ],
        "emojis": [],
        "stickers": [],
        "features": [],
        "mfa_level": 0,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "vanity_url_code": None,
        "description": None,
        "banner": None,
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "public_updates_channel_id": None,
        "nsfw_level": 0,
        "premium_progress_bar_enabled": False,
        "joined_at": iso(),
        "large": False,
        "unavailable": False,
        "member_count": 2,
        "members": [member(bot)],
        "channels": [c for c in channels if c["type"] not in THREAD_TYPES],
        "threads": [c for c in channels if c["type"] in THREAD_TYPES],
        "presences": [],
        "voice_states": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "soundboard_sounds": [],
    }
