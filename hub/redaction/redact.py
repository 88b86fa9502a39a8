"""Redact secrets from text before the hub keeps it anywhere.

Memory, the database, logs and the dashboard are long-lived, indexed, recalled into prompts
and shown to other people, so a key pasted into a chat must not survive into them. `redact`
replaces each secret with `[REDACTED:<kind>]` and keeps the text around it (the variable
name, the user and host of a DSN, the `Authorization: Bearer` prefix), so what is kept still
says what happened without carrying the credential.

Three sources find secrets, and a secret any of them sees is redacted:
- gitleaks' rule set (hub/redaction/ruleset.py, vendored from PyPI): the providers' formats,
  200+ of them, kept up to date upstream; kinds are its rule ids (`github-pat`).
- the credentials this hub is configured with (`remember_secrets`): a platform token or API
  key is redacted wherever it shows up, whatever its shape (an error echoing a refused
  token, a URL with it inside); kind `configured-<fingerprint>`.
- the hand rules below, only for what no rule set covers because it is about how people
  write rather than a provider's format: passwords and PINs after `password:`, `pass:`,
  `pw`, "my PIN is ..."; a DSN's password; Authorization headers; a private key block cut
  short or JSON-escaped; key=value pairs in URLs; bare Telegram bot tokens and `sk-` keys
  of OpenAI-compatible providers, which gitleaks only sees with the provider's name or
  marker next to them. Kinds use underscores (`password`).

Spans found by all of them are merged, so overlapping finds become one placeholder, named
after the most specific source. A span touching a placeholder already in the text is left,
so `redact` is idempotent.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import quote

from hub.redaction import hand_rules
from hub.redaction.hand_rules import REDACTED_MARK
from hub.redaction.ruleset import Finding, gitleaks

__all__ = [
    "REDACTED_MARK",
    "StreamRedactor",
    "fingerprint",
    "redact",
    "redact_json",
    "remember_secrets",
]

PLACEHOLDER = REDACTED_MARK + "{kind}]"
_PLACED = re.compile(r"\[REDACTED:[\w.:-]+\]")  # a placeholder already in the text
_MIN_KNOWN = 8  # a configured value shorter than this is too common a string to hunt for
_known: tuple[tuple[str, str], ...] = ()  # (a configured value or its URL form, its kind)


def remember_secrets(values: Iterable[str]) -> None:
    """Redact these exact values (the hub's configured credentials) from now on, with their
    URL-quoted forms: a platform's error may echo a refused token whatever its shape, a
    library's may print the URL that held it. The placeholder names the credential by its
    fingerprint (`[REDACTED:configured-sha256:1a2b3c4d]`), as `animahub status` lists them."""
    global _known
    found: dict[str, str] = {}
    for value in values:
        if len(value := value.strip()) >= _MIN_KNOWN:
            kind = "configured-" + fingerprint(value)
            found[value] = found[quote(value, safe="")] = kind
    _known = tuple(sorted(found.items(), key=lambda item: len(item[0]), reverse=True))


def fingerprint(value: str | None) -> str:
    """How a configured credential is shown (status, health, logs, the dashboard): enough
    to tell two apart or to check one against a file, never the value or a part of it."""
    if not value:
        return "not set"
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:8]


def _known_findings(text: str) -> Iterator[Finding]:
    for value, kind in _known:
        start = text.find(value)
        while start >= 0:
            yield Finding(start, start + len(value), kind)
            start = text.find(value, start + len(value))


def _findings(text: str) -> list[Finding]:
    """Every source's spans, most specific first: configured values, then gitleaks' rules
    (a provider's format), then the hand rules."""
    found = [*_known_findings(text), *gitleaks().find(text), *hand_rules.find(text)]
    if REDACTED_MARK in text:  # never re-redact a placeholder: `redact` is idempotent
        placed = [match.span() for match in _PLACED.finditer(text)]
        found = [f for f in found if not any(f.start < e and s < f.end for s, e in placed)]
    return found


def _merge(found: list[Finding]) -> list[Finding]:
    """Overlapping spans become one, named by the earliest source among them."""
    order = {id(finding): rank for rank, finding in enumerate(found)}
    merged: list[tuple[Finding, int]] = []
    for finding in sorted(found, key=lambda f: (f.start, -f.end)):
        rank = order[id(finding)]
        if merged and finding.start < merged[-1][0].end:
            last, last_rank = merged[-1]
            kind = last.kind if last_rank <= rank else finding.kind
            span = Finding(last.start, max(last.end, finding.end), kind)
            merged[-1] = (span, min(last_rank, rank))
        else:
            merged.append((finding, rank))
    return [finding for finding, _ in merged]


def redact(text: str) -> tuple[str, list[str]]:
    """Return `text` with secrets replaced by `[REDACTED:<kind>]`, and the kinds found.

    Kinds are listed once each, in the order they appear. Redacting the result again
    changes nothing and finds nothing.
    """
    spans = _merge(_findings(text))
    if not spans:
        return text, []
    kinds: list[str] = []
    out: list[str] = []
    at = 0
    for span in spans:
        out += [text[at : span.start], PLACEHOLDER.format(kind=span.kind)]
        at = span.end
        if span.kind not in kinds:
            kinds.append(span.kind)
    out.append(text[at:])
    return "".join(out), kinds


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
        self._out = ""  # the redacted text let out so far
        self._stuck = False

    def feed(self, piece: str) -> str:
        self._text += piece
        # Without a new space or line break the cut cannot move on (a placeholder holds
        # neither): the whole text is redacted again only when something may be let out.
        if self._stuck or (" " not in piece and "\n" not in piece):
            return ""
        clean = redact(self._text)[0]
        cut = max(clean.rfind(" "), clean.rfind("\n")) + 1
        return self._let_out(clean, cut)

    def rest(self) -> str:
        """What is left to let out once the reply is complete."""
        clean = redact(self._text)[0]
        return "" if self._stuck else self._let_out(clean, len(clean))

    def _let_out(self, clean: str, cut: int) -> str:
        if not clean.startswith(self._out):
            self._stuck = True  # a later piece changed what was let out: say nothing more
            return ""
        if cut <= len(self._out):
            return ""
        out = clean[len(self._out) : cut]
        self._out += out
        return out
