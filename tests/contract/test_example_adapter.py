"""The kit's contract cases against the minimal adapter docs/adapters.md shows
(animahub_kit/example/minichat.py and its fake): the example passes what it says it passes."""

from __future__ import annotations

from animahub_kit.contract.cases import *  # noqa: F403  (the cases, collected here)
from animahub_kit.example.minichat_harness import PLATFORM

CONTRACT_PLATFORMS = {"minichat": PLATFORM}
