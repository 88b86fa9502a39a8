"""The hub's own secret rules: what no provider rule set covers (hub/redaction/redact.py).

These are about how people write a secret rather than a provider's format: a password or
PIN after `password:`, `pass:`, `pw` or said in words; a DSN's password; Authorization
headers; a private key block cut short or JSON-escaped; `token=` pairs in URLs and configs;
two shapes gitleaks sees only with the provider's name or marker beside them (a bare
Telegram bot token, an `sk-` key of an OpenAI-compatible provider); a webhook URL's secret
path segment; and a provider-style token (prefix, separator, random body) of a provider
gitleaks has no rule for. A value that is already a placeholder never matches. Kinds are
named as gitleaks names its rules.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hub.redaction.ruleset import Finding

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
# A token's value (no `&`: in a URL it starts the next parameter, unlike in a password).
_TOKEN_VALUE = _VALUE.replace(r"""[^\s"'`,;]+""", r"""[^\s"'`,;&]+""")
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
    return classes >= 2 and _entropy(value) >= 3.0


def _random_body(value: str) -> bool:
    """The random part of a prefixed token: letters of both cases and digits, or hex, or
    capitals and digits, and about 3.5+ bits a character; hyphenated words have none of
    these mixes."""
    if len(value) < 20 or _entropy(value) < 3.5:
        return False
    lower, upper = any(c.islower() for c in value), any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    # 40+: a UUID without its hyphens (32) is an id the hub itself shows, not a secret
    hexadecimal = len(value) >= 40 and all(c in "0123456789abcdef" for c in value)
    return digit and ((lower and upper) or hexadecimal or (upper and not lower))


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


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
        rf"{_KEY_START}(?i:[\w.-]*(?:key|secret|token|credentials?|auth)){_ASSIGN}{_TOKEN_VALUE}",
        _high_entropy,
    ),
    # A webhook's secret is a path segment: Discord's, Teams' and others' alike.
    _rule(
        "webhook-url",
        r"(?i:https?://[^\s/]{1,100}/(?:[^\s/]{1,100}/){0,4}?[^\s/]*hooks?/)"
        r"(?:[^\s/]{1,100}/){0,3}(?P<secret>[A-Za-z0-9_-]{32,})",
        _high_entropy,
    ),
)

# A provider's token is made to be recognisable on its own: a short prefix, a separator and
# a random body (`gsk_…`, `dckr_pat_…`, `GOCSPX-…`, `hvs.…`). This rule is that design
# rather than a list of providers: gitleaks knows many prefixes, and a new provider's is
# caught before any rule set learns it. It needs no anchor word, so it looks only at runs
# of token characters long enough to hold one (prose has few), matching each run whole.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9._-]{23,}")
# A provider's prefix is one case (`gsk`, `GOCSPX`, `r8`): a random id's first characters
# rarely are, so an id with a `-` or `_` early on is not taken for a prefixed token.
_PREFIXED = re.compile(
    r"(?:[a-z][a-z0-9]{1,7}|[A-Z][A-Z0-9]{1,7})(?:[._-][A-Za-z0-9]{2,8}){0,2}[._-]"
    r"(?P<secret>[A-Za-z0-9_-]{20,})"
)


def _prefixed_tokens(text: str) -> Iterator[Finding]:
    for run in _TOKEN_RUN.finditer(text):
        before = text[run.start() - 1] if run.start() else " "
        # Inside a longer word (a letter outside ASCII before it), or a URL's path segment:
        # the hub's own sign-in link is one, and a webhook's secret path has its own rule.
        if before.isalnum() or before in "_/":
            continue
        token = run.group().rstrip(".")  # the end of a sentence is not the token's
        match = _PREFIXED.fullmatch(token)
        if match and _random_body(match.group("secret")):
            yield Finding(run.start(), run.start() + len(token), "prefixed-token")


# What each kind's patterns all hold (lowercased): a rule runs only on text holding one,
# which spares most messages every rule, at a few microseconds for the look.
_ANCHORS = {
    "private-key": ("private key",),
    "telegram-bot-token": (":aa",),
    "sk-api-key": ("sk-",),
    "url-password": ("://",),
    "bearer-token": ("bearer",),
    "basic-auth": ("basic",),
    "password": ("pass", "pw", "pin"),
    "generic-secret": ("key", "secret", "token", "credential", "auth"),
    "webhook-url": ("hook",),
}


def find(text: str) -> Iterator[Finding]:
    """Every secret these rules see in `text`."""
    lowered = text.lower()
    for rule in RULES:
        if not any(anchor in lowered for anchor in _ANCHORS[rule.kind]):
            continue
        for match in rule.pattern.finditer(text):
            group = "secret" if "secret" in rule.pattern.groupindex else 0
            if rule.accept(match.group(group)):
                yield Finding(match.start(group), match.end(group), rule.kind)
    yield from _prefixed_tokens(text)
