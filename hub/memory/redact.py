"""Redact secrets from text before it is written to an Anima's memory.

Memory is long-lived, indexed, recalled into prompts and shown to other people, so a
key pasted into a chat must not survive into it. `redact` replaces each secret with
`[REDACTED:<kind>]` and keeps the text around it (the variable name, the user and
host of a DSN, the `Authorization: Bearer` prefix), so the memory still says what
happened without carrying the credential.

Why hand-written patterns: nothing installed does this job. litellm's internal
`secret_redaction` module replaces whole `key=value` spans with a bare "REDACTED",
reports no kinds, matches case-insensitively (so `akia...` counts as an AWS key) and
is private API. On PyPI, detect-secrets (last release May 2024) is a repository
scanner: it works line by line and yields secret values for a baseline file, not spans
to replace, has no Anthropic plugin, and matches OpenAI keys only with the T3BlbkFJ
marker and Stripe keys only at 24 characters. Presidio targets personal data and needs
a spaCy model. The formats below are the providers' documented prefixes plus key=value
contexts, where an entropy check spares ordinary values.

Rules run in order, most specific first, and never match a placeholder, so a later
rule cannot re-redact an earlier one's output and `redact` is idempotent.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REDACTED_MARK = "[REDACTED:"  # how every placeholder starts: text holding one held a secret
PLACEHOLDER = REDACTED_MARK + "{kind}]"
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


_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        rf"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        # to the END line; a paste cut short ends with its last all-base64 line
        rf"(?:(?:(?!-----BEGIN )[\s\S])*?{_PEM_END}|(?:{_PEM_LINE})*)",
    ),
    _rule("aws_access_key", r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    _rule("github_token", r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_\w{22,244})"),
    _rule("slack_token", r"(?<![\w-])(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
    _rule("anthropic_key", rf"(?<![\w-])sk-ant-{_B64URL}{{20,}}"),
    # Legacy (sk-...T3BlbkFJ...) and project/service-account keys; a digit is required
    # so that hyphenated words after "sk-" are not taken for a key.
    _rule("openai_key", rf"(?<![\w-])sk-(?=[\w-]*\d){_B64URL}{{20,}}"),
    _rule("stripe_key", r"(?<!\w)(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})"),
    _rule("google_api_key", rf"(?<![\w-])AIza{_B64URL}{{35}}(?!{_B64URL})"),
    _rule("jwt", rf"(?<![\w-])eyJ{_B64URL}{{5,}}\.{_B64URL}{{5,}}\.{_B64URL}*"),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[\w/-]{10,})",
    ),
    # scheme://user:password@host: the password only, user and host stay readable.
    # Bounded lengths and the scheme's start anchor keep long dotted runs linear.
    _rule(
        "url_password",
        rf"(?<![\w.+-])(?i:[a-z][a-z0-9+.-]{{0,31}}://)[^\s:/@'\"]{{0,256}}:"
        rf"(?P<secret>{_FRESH}[^\s/'\"]{{1,256}})@",
        _plausible_password,
    ),
    _rule(
        "aws_secret_key",
        rf"{_KEY_START}(?i:(?:aws_?)?secret_?(?:access_?)?key){_ASSIGN}"
        rf"(?P<secret>[A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])",
    ),
    # In an Authorization header anything is a token; in prose ("use Bearer
    # authentication") only a random-looking one is.
    _rule(
        "bearer_token",
        rf"{_AUTH_HEADER}(?i:bearer)\s+(?P<secret>{_TOKEN}{{6,}}=*)",
    ),
    _rule("bearer_token", rf"\b(?i:bearer)\s+(?P<secret>{_TOKEN}{{16,}}=*)", _high_entropy),
    _rule(
        "basic_auth",
        rf"{_AUTH_HEADER}(?i:basic)\s+(?P<secret>[A-Za-z0-9+/]{{8,}}={{0,2}})",
    ),
    _rule(
        "password",
        rf"{_KEY_START}(?i:[\w.-]*(?:password|passwd|passphrase|pwd)){_ASSIGN}{_VALUE}",
        _plausible_password,
    ),
    # Said in words: "my password is hunter2", "the PIN is 9931" (`_spoken_secret`).
    _rule(
        "password",
        rf"{_KEY_START}(?i:password|passwd|passphrase|passcode|pin(?: code| number)?)"
        rf"\s+(?i:is|was)\s+(?P<secret>{_FRESH}[^\s\"'`,;]*[^\s\"'`,;.!?:)])",
        _spoken_secret,
    ),
    _rule(
        "generic_secret",
        rf"{_KEY_START}(?i:[\w.-]*(?:api[_-]?key|access[_-]?key|secret[_-]?key|secret|"
        rf"token|credentials?|auth)){_ASSIGN}{_VALUE}",
        _high_entropy,
    ),
)


# Every rule's pattern holds one of these (lowercased): text with none (most messages) has
# no secret, and looking for them costs a few microseconds where the rules cost 100+.
_ANCHORS = (
    *("private key", "akia", "asia", "github_pat_", "xox", "xapp-", "sk-", "sk_", "rk_"),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "whsec_", "aiza", "eyj", "://", "secret"),
    *("key", "bearer", "basic", "authoriz", "pass", "pwd", "token", "credential", "auth"),
    "pin",
)


def redact(text: str) -> tuple[str, list[str]]:
    """Return `text` with secrets replaced by `[REDACTED:<kind>]`, and the kinds found.

    Kinds are listed once each, in rule order. Redacting the result again changes
    nothing and finds nothing.
    """
    kinds: list[str] = []
    lowered = text.lower()
    if not any(anchor in lowered for anchor in _ANCHORS):
        return text, kinds
    for rule in _RULES:
        text = rule.pattern.sub(_replacer(rule, kinds), text)
    return text, kinds


def _replacer(rule: _Rule, kinds: list[str]) -> Callable[[re.Match[str]], str]:
    """A `re.sub` callback that swaps the secret part of a match for the placeholder."""

    def replace(match: re.Match[str]) -> str:
        group = "secret" if "secret" in match.re.groupindex else 0
        whole, secret = match.group(0), match.group(group)
        if not rule.accept(secret):
            return whole
        if rule.kind not in kinds:
            kinds.append(rule.kind)
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        return whole[:start] + PLACEHOLDER.format(kind=rule.kind) + whole[end:]

    return replace


def redact_json(value: Any) -> Any:
    """`value` (a JSON payload) with `redact` applied to every string in it."""
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    return value


class StreamRedactor:
    """Redacts a reply while it streams: text is let out only up to the last whitespace of
    the redacted text so far, since a secret is one run of non-space characters after its
    key, and a later piece may complete it. What was let out never changes; if redacting
    more text would change it (a multi-line key block), nothing more is let out until
    `rest`, and the stored reply, redacted whole, is what counts."""

    def __init__(self) -> None:
        self._text = ""
        self._out = 0  # characters of the redacted text let out so far
        self._stuck = False

    def feed(self, piece: str) -> str:
        self._text += piece
        if self._stuck:
            return ""
        clean = redact(self._text)[0]
        cut = max(clean.rfind(" "), clean.rfind("\n")) + 1
        return self._let_out(clean, cut)

    def rest(self) -> str:
        """What is left to let out once the reply is complete."""
        clean = redact(self._text)[0]
        return "" if self._stuck else self._let_out(clean, len(clean))

    def _let_out(self, clean: str, cut: int) -> str:
        if cut <= self._out:
            return ""
        out, self._out = clean[self._out : cut], cut
        return out
