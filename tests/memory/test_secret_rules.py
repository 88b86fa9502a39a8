"""The redactor's rule sources (hub/redaction/ruleset.py, hand_rules.py, redact.py): the
vendored gitleaks rules all load and translate, a sample of credential formats from every
source is caught (the full sweep is bench/secrets_recall.py), configured credentials are
redacted by value and shown by fingerprint, and the stream redactor keeps its promise.

Secrets are generated from a seeded RNG, in the providers' shapes, not written out.
"""

from __future__ import annotations

import random
import re
import string
import tomllib
import warnings

import pytest

from hub.redaction import redact as redact_module
from hub.redaction.redact import StreamRedactor, fingerprint, redact, remember_secrets
from hub.redaction.ruleset import RULES_FILE, gitleaks, python_pattern

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def fake(alphabet: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


@pytest.fixture(autouse=True)
def _no_configured_secrets() -> None:
    remember_secrets(())  # process-wide: one test's credentials are not another's


def test_every_rule_that_can_see_chat_text_loads_and_compiles_without_warnings() -> None:
    raw = tomllib.loads(RULES_FILE.read_text(encoding="utf-8"))["rules"]
    usable = [rule for rule in raw if "regex" in rule and "path" not in rule]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Python's "possible nested set" and the like
        for rule in usable:
            re.compile(python_pattern(rule["regex"]))
    assert len(gitleaks().rules) == len(usable) > 200


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"(?i)abc", r"(?i)abc"),  # a flag at the start stays global
        (r"x-(?i)[a-f]{4}", r"x-(?i:[a-f]{4})"),  # mid-pattern: to the end of its group
        (r"(a(?i)b|c)d", r"(a(?i:b)|(?i:c))d"),  # an alternation keeps the flag on each side
        (r"\bsha~\w+(?:\z|x)", r"\bsha~\w+(?:\Z|x)"),
        (r"[[:alnum:]]{4}", r"[0-9A-Za-z]{4}"),
        (r"[a[b]", r"[a\[b]"),
    ],
)
def test_go_patterns_become_python_patterns_with_the_same_meaning(go: str, python: str) -> None:
    assert python_pattern(go) == python


def test_the_flag_scope_matches_what_re2_matches() -> None:
    pattern = re.compile(python_pattern(r"\b(s-s4t2(?:ud|af)-(?i)[abcdef0123456789]{8})"))
    assert pattern.search("s-s4t2ud-ABCDEF12") and not pattern.search("S-S4T2UD-abcdef12")


# One sample a source and shape; `kind` is the placeholder's name.
SAMPLES = [
    ("telegram-bot-token", "bot is {} ok", "7012345678:AA" + fake(B64URL, 33, 1)),
    ("huggingface-access-token", "{}", "hf_" + fake(string.ascii_letters, 34, 2)),
    ("gitlab-pat", "token {}", "glpat-" + fake(B64URL, 20, 3)),
    ("npm-access-token", "npm token {} here", "npm_" + fake(ALNUM, 36, 4)),
    ("sendgrid-api-token", "{}", "SG." + fake(B64URL, 22, 5) + "." + fake(B64URL, 43, 6)),
    ("github-pat", "{}", "ghp_" + fake(ALNUM, 36, 7)),
    (
        "slack-bot-token",
        "{}",
        f"xoxb-{fake('123456789', 12, 8)}-{fake('123456789', 13, 9)}-" + fake(ALNUM, 24, 10),
    ),
    ("stripe-access-token", "{}", "sk_live_" + fake(ALNUM, 24, 11)),
    ("shopify-access-token", "{}", "shpat_" + fake(HEX, 32, 12)),
    ("prefixed-token", "the groq key {} fails", "gsk_" + fake(ALNUM, 52, 13)),
    ("prefixed-token", "it ends the sentence: {}.", "dckr_pat_" + fake(B64URL, 27, 15)),
    ("webhook-url", "https://discord.com/api/webhooks/1234567890123/{}", fake(B64URL, 68, 14)),
    ("password", "pass: {}", "hunter2!"),
    ("password", "pw {} please", "Gr33nTea"),
    ("password", "the gate PIN is {}.", "4417"),
    ("url-password", "redis://:{}@cache:6379", "r3dis-pass"),
]


@pytest.mark.parametrize(("kind", "template", "secret"), SAMPLES)
def test_a_sample_of_formats_is_caught(kind: str, template: str, secret: str) -> None:
    redacted, kinds = redact(template.format(secret))
    assert secret not in redacted
    assert redacted == template.format(f"[REDACTED:{kind}]")
    assert kinds == [kind]
    assert redact(redacted) == (redacted, [])


@pytest.mark.parametrize(
    "text",
    [
        "Boarding pass: gate 4, seat 12A.",
        "I pinned it: the map of the state-of-the-art well-known self-explanatory ideas.",
        "See https://example.com/hooks/setup-guide-for-new-contributors today",
        "The build id is release-2026.12.07-final and ran for 3 minutes.",
        "Ping me at 10:30, my pw is in the vault",
        "turn a1297ac9-bff1-4677-8ccf-9f4c104baefa of person p-9f4c104baefa4677a8ccfbff1a1297ac",
        # the hub's own sign-in link, sent through the outbox (which redacts what it sends)
        "Your sign-in link: http://127.0.0.1:18500/signin/ab-Xq3Zk9Lm2Np8Rt5Vw7Yb1Cd4Fg6Hj0Ks2Mu",
        "a random id with an early hyphen: aZ3k-Xq3Zk9Lm2Np8Rt5Vw7Yb1Cd4Fg6Hj0Ks2Mu",
    ],
)
def test_look_alikes_survive(text: str) -> None:
    assert redact(text) == (text, [])


def test_a_configured_credential_is_redacted_whatever_its_shape_and_named_by_fingerprint() -> None:
    token = "plain-looking-but-configured"  # no rule would call this a secret
    remember_secrets([token, "short"])
    shown = fingerprint(token)
    assert re.fullmatch(r"sha256:[0-9a-f]{8}", shown) and token not in shown
    error = f"The token `{token}` was rejected by the server; url=/bot{token.replace('-', '%2D')}"
    redacted, kinds = redact(error)
    assert token not in redacted and kinds == [f"configured-{shown}"]
    assert redact("short and sweet") == ("short and sweet", [])  # too common to hunt for
    assert redact(redacted) == (redacted, [])


def test_fingerprint_of_nothing_says_so() -> None:
    assert fingerprint(None) == fingerprint("") == "not set"


def test_the_stream_lets_out_only_whole_words_and_never_a_secret() -> None:
    token = "ghp_" + fake(ALNUM, 36, 20)
    stream = StreamRedactor()
    out = [stream.feed(piece) for piece in ("your key ", token[:10], token[10:], " works", "!")]
    out.append(stream.rest())
    assert "".join(out) == "your key [REDACTED:github-pat] works!"
    assert out[1] == "" and out[2] == ""  # nothing of the token left before it was whole


def test_the_stream_stops_when_a_later_piece_changes_what_was_let_out() -> None:
    stream = StreamRedactor()
    said = stream.feed("-----BEGIN RSA PRIVATE KEY-----\n")
    said += stream.feed(fake(ALNUM, 64, 21) + "\n")
    said += stream.feed("-----END RSA PRIVATE KEY----- done")
    said += stream.rest()
    assert fake(ALNUM, 64, 21) not in said


def test_the_known_values_are_process_wide_and_replaced_not_added() -> None:
    remember_secrets(["first-credential-value"])
    remember_secrets(["second-credential-value"])
    assert redact("first-credential-value")[1] == []
    assert redact("second-credential-value")[1] != []
    assert redact_module._known  # the module keeps them, sorted longest first
