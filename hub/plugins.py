"""The adapters installed as entry points of the `animahub.adapters` group, loaded by name.

Below both `hub.settings` (which reads each adapter's settings model from its plugin) and
`hub.adapter` (which checks that each is an `AdapterPlugin`), so neither imports the other
to find them: the contract imports the settings, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "animahub.adapters"


def load_plugins(names: Sequence[str] | None = None) -> dict[str, object]:
    """What each entry point of the group names, by platform name (all, or `names`);
    LookupError naming those of `names` no adapter registers."""
    found: dict[str, object] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if names is None or ep.name in names:
            found[ep.name] = ep.load()
    if names is not None:
        missing = sorted(set(names) - set(found))
        if missing:
            raise LookupError(f"no adapter registered for: {', '.join(missing)}")
    return found
