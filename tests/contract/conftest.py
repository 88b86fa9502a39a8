"""The contract's fixtures and per-platform generation come from the kit's pytest plugin
(animahub_kit/contract/plugin.py); each test module here names its CONTRACT_PLATFORMS."""

from __future__ import annotations

from animahub_kit.contract.plugin import (  # noqa: F401  (pytest finds them here)
    harness,
    opener,
    pytest_collection_modifyitems,
    pytest_generate_tests,
)
