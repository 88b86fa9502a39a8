"""Hypothesis profiles for the fuzz suite: `ci` (the default: few examples, derandomized so a
CI run is the same every time) and `full` (`ANIMAHUB_SUITE_SIZE=full`: many examples, random
seeds, the figures in docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.sizes import FULL

_HERE = Path(__file__).parent

# A too_slow or large-data health check is about the strategy's speed, not a finding.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci", max_examples=60, derandomize=True, deadline=None, suppress_health_check=_QUIET
)
settings.register_profile(
    "full", max_examples=2000, deadline=None, suppress_health_check=_QUIET, print_blob=True
)
settings.load_profile("full" if FULL else "ci")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """At the full size a test runs thousands of examples: longer than the suite's usual
    per-test timeout (a safety net, not a measure)."""
    if FULL:
        for item in items:
            if _HERE in item.path.parents:
                item.add_marker(pytest.mark.timeout(1800))
