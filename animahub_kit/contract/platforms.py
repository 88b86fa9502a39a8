"""The platforms this repository's adapters run the contract on, each against its fake."""

from __future__ import annotations

from collections.abc import Mapping

from animahub_kit.contract import discord_harness, line_harness, slack_harness, telegram_harness
from animahub_kit.contract.harness import ContractPlatform

BUILTIN: Mapping[str, ContractPlatform] = {
    "slack": slack_harness.PLATFORM,
    "discord": discord_harness.PLATFORM,
    "line": line_harness.PLATFORM,
    "telegram": telegram_harness.PLATFORM,
}
