"""The kit's contract cases (animahub_kit/contract/cases.py) on this repository's four
platforms, each adapter with its real SDK against its fake (animahub_kit/fakes/)."""

from __future__ import annotations

from animahub_kit.contract.cases import *  # noqa: F403  (the cases, collected here)
from animahub_kit.contract.platforms import BUILTIN

CONTRACT_PLATFORMS = BUILTIN
