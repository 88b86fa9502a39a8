"""Building blocks for the fuzz suite: nasty strings, junk JSON, and platform payloads whose
fields are each either what the platform sends, junk of another type, or missing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.sizes import size

JSON = dict[str, Any]

# Any code point but surrogates (a JSON body is UTF-8, which cannot carry them).
_CHARS = st.characters(exclude_categories=["Cs"])
_SPICE = st.sampled_from(
    [
        "\x00",
        "\u200b",
        "\u202e",
        "\ufeff",
        "\n",
        "\r\n",
        "\t",
        "🦊",
        "👩‍👩‍👧",
        "東京",
        "é",
        "ß",
        " ",
    ]
)


def examples(ci: int, full: int, *, fixture: bool = False) -> settings:
    """This test's number of examples at the run's size (tests/sizes.py). `fixture`: the test
    uses a function-scoped fixture (a fake platform) that all its examples share on purpose."""
    checks = list(settings().suppress_health_check)
    if fixture:
        checks.append(HealthCheck.function_scoped_fixture)
    return settings(max_examples=size(ci=ci, full=full), suppress_health_check=checks)


def nasty_text(max_size: int = 40) -> st.SearchStrategy[str]:
    """Short strings of any characters, often with NUL, zero-width, RTL, emoji or CJK."""
    plain = st.text(_CHARS, max_size=max_size)
    spiced = st.lists(st.one_of(st.text(_CHARS, max_size=8), _SPICE), max_size=8).map("".join)
    return st.one_of(plain, spiced)


def huge_text() -> st.SearchStrategy[str]:
    """A few short pieces repeated into tens of thousands of characters."""
    return st.builds(
        lambda piece, times: piece * times, nasty_text(6).filter(bool), st.integers(500, 8000)
    )


def text(max_size: int = 40) -> st.SearchStrategy[str]:
    return st.one_of(nasty_text(max_size), nasty_text(max_size), huge_text())


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    nasty_text(12),
)
junk: st.SearchStrategy[Any] = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(nasty_text(8), inner, max_size=3)
    ),
    max_leaves=6,
)


def value(proper: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the proper value, sometimes junk of any type."""
    return st.one_of(proper, proper, proper, junk)


def shaped(
    required: dict[str, st.SearchStrategy[Any]] | None = None,
    /,
    **optional: st.SearchStrategy[Any],
) -> st.SearchStrategy[JSON]:
    """A JSON object with these fields: `required` always present (proper or junk), the
    others proper, junk or left out."""
    return st.fixed_dictionaries(
        {k: value(v) for k, v in (required or {}).items()},
        optional={k: value(v) for k, v in optional.items()},
    )


def digits(low: int = 1, high: int = 10**19) -> st.SearchStrategy[int]:
    return st.integers(min_value=low, max_value=high)


def snowflake() -> st.SearchStrategy[str]:
    return digits(10**15, 10**19).map(str)
