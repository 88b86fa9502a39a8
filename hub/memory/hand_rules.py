"""The hub's own secret rules: what no provider rule set covers (hub/memory/redact.py).

These are about how people write a secret rather than a provider's format: a password or
PIN after `password:`, `pass:`, `pw` or said in words; a DSN's password; Authorization
headers; a private key block cut short or JSON-escaped; `token=` pairs in URLs and configs;
and two shapes gitleaks sees only with the provider's name or marker beside them: a bare
Telegram bot token and an `sk-` key of an OpenAI-compatible provider. A value that is
already a placeholder never matches. Kinds are named as gitleaks names its rules.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hub.memory.ruleset import Finding

REDACTED_MARK = "[REDACTED:"  # how every placeholder starts: text holding one held a secret
_FRESH = rf"(?!{re.escape(REDACTED_MARK)})"  # a value that is not already a placeholder
_KEY_START = r"(?<![\w.-])"  # keys start at a word start: no quadratic rescans
# `key = value` on one line, also quoted or in markdown: **Password:** `hunter2`
_ASSIGN = r"""["'`*]{0,3}[ \t]*[:=][ \t]*\**[ \t]*(?P<q>["'`]?)"""
# A value after `_ASSIGN`: to the closing quote if quoted, else to whitespace.
_VALUE = (
    rf"""(?P<secret>{_FRESH}(?:(?<=")[^"\n]+|(?<=')[^'\n]+|(?<=`)[^`\n]+|"""
    r"""(?<!["'`])[^\s"'`,;]+))"""
)
_B64URL = "[A-Za-z0-9_-]"
_TOKEN = "[A-Za-z0-9._~+/-]"  # RFC 6750 b64token
_AUTH_HEADER = r"""(?i:authorization)["']?[ \t]*[:=][ \t]*["']?"""
_PEM_LINE = r"""(?:\r?\n|\\n)[A-Za-z0-9+/=]+(?=[\r\n"']|\\n|\Z)"""  # raw or JSON-escaped
_PEM_END = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

# Values that name or hide a secret rather than being one: password: ${DB_PASSWORD}.
_PLACEHOLDER_VALUE = re.compile(r"[$<{%]|env:|\*+$|x+$|•+$|\.{3}", re.IGNORECASE)
_PROSE_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "can", "changed", "false", "for", "here", "in", "is"}
    | {"must", "nil", "no", "none", "not", "null", "of", "on", "optional", "or", "please"}
    | {"required", "reset", "see", "set", "should", "the", "to", "true", "was", "will", "with"}
)


def _always(_value: str) -> bool:
    return True


def _plausible_password(value: str) -> bool:
    """Spare `password: is required` and `password=${DB_PASSWORD}`: prose and templates."""
    word = value.strip(".,!?:;)").casefold()
    return bool(word) and word not in _PROSE_WORDS and not _PLACEHOLDER_VALUE.match(value)


def _spoken_secret(value: str) -> bool:
    """A password or PIN in a sentence: a value with a digit or a sign, so "the password is
    rotated monthly" and "is in the vault" stay sentences."""
    word = value.rstrip(".,!?:;)")
    return len(word) >= 3 and not word.isalpha() and _plausible_password(word)


def _high_entropy(value: str) -> bool:
    """A random-looking token: long, mixed character classes, about 3+ bits a character.

    `token=your-token-here` or `secret: my_secret_value` are examples, not secrets.
    """
    if len(value) < 16 or _PLACEHOLDER_VALUE.match(value):
        return False
    classes = sum(any(test(c) for c in value) for test in (str.islower, str.isupper, str.isdigit))
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return classes >= 2 and entropy >= 3.0


@dataclass(frozen=True)
class _Rule:
    """One kind of secret; the `secret` group (else the whole match) is replaced."""

    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool] = _always


def _rule(kind: str, pattern: str, accept: Callable[[str], bool] = _always) -> _Rule:
    return _Rule(kind, re.compile(pattern), accept)


RULES: tuple[_Rule, ...] = (
    _rule(
        "private-key",
        rf"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        # to the END line; a paste cut short ends with its last all-base64 line
        rf"(?:(?:(?!-----BEGIN )[\s\S])*?{_PEM_END}|(?:{_PEM_LINE})*)",
    ),
    # Telegram's documented shape, `<bot id>:<35 characters>`; the second part starts with
    # "AA" in every token BotFather has issued. Gitleaks wants "telegram" next to it.
    _rule("telegram-bot-token", r"(?<![\w:])\d{6,12}:AA[A-Za-z0-9_-]{33}(?![\w-])"),
    # OpenAI-compatible providers (DeepSeek, Moonshot, OpenRouter...) all use `sk-`; a digit
    # is required so that hyphenated words after "sk-" are not taken for a key.
    _rule("sk-api-key", rf"(?<![\w-])sk-(?=[\w-]*\d){_B64URL}{{20,}}"),
    # scheme://user:password@host: the password only, user and host stay readable.
    # Bounded lengths and the scheme's start anchor keep long dotted runs linear.
    _rule(
        "url-password",
        rf"(?<![\w.+-])(?i:[a-z][a-z0-9+.-]{{0,31}}://)[^\s:/@'\"]{{0,256}}:"
        rf"(?P<secret>{_FRESH}[^\s/'\"]{{1,256}})@",
        _plausible_password,
    ),
    # In an Authorization header anything is a token; in prose ("use Bearer
    # authentication") only a random-looking one is.
    _rule(
        "bearer-token",
        rf"{_AUTH_HEADER}(?i:bearer)\s+(?P<secret>{_FRESH}{_TOKEN}{{6,}}=*)",
    ),
    _rule("bearer-token", rf"\b(?i:bearer)\s+(?P<secret>{_TOKEN}{{16,}}=*)", _high_entropy),
    _rule(
        "basic-auth",
        rf"{_AUTH_HEADER}(?i:basic)\s+(?P<secret>[A-Za-z0-9+/]{{8,}}={{0,2}})",
    ),
    _rule(
        "password",
        rf"{_KEY_START}(?i:[\w.-]*(?:password|passwd|passphrase|passwort|pwd)){_ASSIGN}{_VALUE}",
        _plausible_password,
    ),
    # Short keys are words too ("boarding pass: gate 4"): their value needs a digit or a sign.
    _rule("password", rf"{_KEY_START}(?i:pass|pw|pin|passcode){_ASSIGN}{_VALUE}", _spoken_secret),
    # Said in words: "my password is hunter2", "the PIN is 9931", "pw hunter2!" (a value
    # with a digit or a sign, `_spoken_secret`).
    _rule(
        "password",
        rf"{_KEY_START}(?:(?i:password|passwd|passphrase|passcode|pin(?: code| number)?)"
        rf"\s+(?i:is|was)|(?i:pw|pwd))\s+(?P<secret>{_FRESH}[^\s\"'`,;]*[^\s\"'`,;.!?:)])",
        _spoken_secret,
    ),
    _rule(
        "generic-secret",
        rf"{_KEY_START}(?i:[\w.-]*(?:api[_-]?key|access[_-]?key|secret[_-]?key|secret|"
        rf"token|credentials?|auth)){_ASSIGN}{_VALUE}",
        _high_entropy,
    ),
)

# Every rule's pattern holds one of these (lowercased): text with none (most messages) has
# no secret for these rules, and looking for them costs a few microseconds.
_ANCHORS = (
    *("private key", "sk-", "://", "secret", "key", "bearer", "basic", "authoriz", "pass"),
    *("pwd", "pw", "token", "credential", "auth", "pin", ":aa"),
)


def find(text: str) -> Iterator[Finding]:
    """Every secret these rules see in `text`."""
    lowered = text.lower()
    if not any(anchor in lowered for anchor in _ANCHORS):
        return
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            group = "secret" if "secret" in rule.pattern.groupindex else 0
            if rule.accept(match.group(group)):
                yield Finding(match.start(group), match.end(group), rule.kind)
