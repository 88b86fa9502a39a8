"""Tests for hub.redaction.redact: provider formats, realistic pastes, ordinary text, idempotence.

Secrets are generated from a seeded RNG rather than written out, so no scanner mistakes
this file for a leak, and each run sees the same values.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from hub.redaction.redact import redact

ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "-_"
UPPER_DIGITS = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"  # AWS key ids
HEX = "0123456789abcdef"


def _fake(alphabet: str, length: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


def _b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


AWS_ID = "AKIA" + _fake(BASE32, 16, 1)
AWS_SESSION_ID = "ASIA" + _fake(BASE32, 16, 2)
AWS_SECRET = _fake(ALNUM + "/+", 40, 3)
GH_PAT = "github_pat_" + _fake(ALNUM, 22, 4) + "_" + _fake(ALNUM, 59, 5)
SLACK_BOT = "xoxb-" + _fake(string.digits, 12, 6) + "-" + _fake(string.digits, 13, 60)
SLACK_BOT += "-" + _fake(ALNUM, 24, 7)
SLACK_USER_IDS = "xoxp-" + "-".join(_fake(string.digits, 12, s) for s in (33, 41, 42))
SLACK_APP = "xapp-1-A" + _fake(UPPER_DIGITS, 10, 35) + "-" + _fake(string.digits, 13, 43)
SLACK_APP += "-" + _fake(HEX, 64, 36)
SLACK_HOOK_PATH = "T" + _fake(UPPER_DIGITS, 8, 8) + "/B" + _fake(UPPER_DIGITS, 10, 9) + "/"
SLACK_HOOK_PATH += _fake(ALNUM, 24, 10)
OPENAI_PROJECT = "sk-proj-" + _fake(B64URL, 74, 11) + "T3BlbkFJ" + _fake(B64URL, 74, 16)
ANTHROPIC = "sk-ant-api03-" + _fake(B64URL, 93, 12) + "AA"
JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "42", "exp": 1}),
        _fake(B64URL, 43, 13),
    ]
)
BEARER = _fake(ALNUM, 40, 14)
PEM_BODY = "\n".join(_fake(ALNUM + "+/", 64, seed) for seed in range(20, 26))
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
GENERIC = _fake(ALNUM, 32, 15)


def _tag(kind: str) -> str:
    return f"[REDACTED:{kind}]"


CASES = [
    ("aws-access-token", "export AWS_ACCESS_KEY_ID={}", AWS_ID),
    ("aws-access-token", "temporary creds {} from STS", AWS_SESSION_ID),
    ("generic-api-key", "aws_secret_access_key = {}", AWS_SECRET),
    ("generic-api-key", '{{"SecretAccessKey": "{}"}}', AWS_SECRET),
    ("github-pat", "git clone with ghp_ token {} failed", "ghp_" + _fake(ALNUM, 36, 30)),
    ("github-oauth", "GH_TOKEN={}", "gho_" + _fake(ALNUM, 36, 31)),
    ("github-app-token", "app token {}.", "ghs_" + _fake(ALNUM, 36, 32)),
    ("github-fine-grained-pat", "fine-grained: {}", GH_PAT),
    ("slack-bot-token", "SLACK_BOT_TOKEN={}", SLACK_BOT),
    (
        "slack-user-token",
        "user token {}",
        SLACK_USER_IDS + "-" + _fake(HEX, 32, 3),
    ),
    (
        "slack-app-token",
        "socket mode uses {}",
        SLACK_APP,
    ),
    ("telegram-bot-token", "here it is: {} ok", "7012345678:AA" + _fake(B64URL, 33, 44)),
    ("telegram-bot-api-token", "TELEGRAM_BOT_TOKEN={}", "7012345678:AA" + _fake(B64URL, 33, 45)),
    ("huggingface-access-token", "login with {}", "hf_" + _fake(string.ascii_letters, 34, 46)),
    ("gitlab-pat", "GITLAB_TOKEN {}", "glpat-" + _fake(B64URL, 20, 47)),
    ("npm-access-token", "//registry.npmjs.org/:_authToken={}", "npm_" + _fake(ALNUM, 36, 48)),
    ("sendgrid-api-token", "key {}", "SG." + _fake(B64URL, 22, 9) + "." + _fake(B64URL, 43, 2)),
    ("password", "pass: {}", "hunter2!"),
    ("password", "wifi pw {} thanks", "Gr33nTea"),
    (
        "slack-webhook-url",
        "post to {} please",
        "https://hooks.slack.com/services/" + SLACK_HOOK_PATH,
    ),
    ("openai-api-key", "OPENAI_API_KEY={}", OPENAI_PROJECT),
    ("sk-api-key", "old key {} revoked", "sk-" + _fake(ALNUM, 48, 37)),
    ("anthropic-api-key", "ANTHROPIC_API_KEY={}", ANTHROPIC),
    ("gcp-api-key", "maps?key={}&callback=init", "AIza" + _fake(B64URL, 35, 38)),
    ("stripe-access-token", "stripe: {}", "sk_live_" + _fake(ALNUM, 24, 39)),
    ("stripe-access-token", "restricted {} for reports", "rk_live_" + _fake(ALNUM, 24, 40)),
    ("jwt", "cookie session={}; Path=/", JWT),
    ("private-key", "my key:\n{}\nwhy does ssh reject it?", PEM),
    ("password", "password={}", "hunter2-x9"),
    ("password", "password={} # staging", "Tr0ub4dor&3"),
    ("password", "passwd: {}", "s3cr3t-Pa55"),
    ("password", '{{"password": "{}"}}', "correct horse battery staple"),
    ("password", "DB_PASSWORD='{}'", "p@ss w0rd"),
    ("password", "**Password:** {} (rotate monthly)", "hunter2!"),
    ("password", "run `PGPASSWORD={} psql -h db`", "Wint3r"),
    ("password", "export PGPASSWORD={}", "Wint3r"),
    ("password", "My password is {}, don't tell anyone", "hunter2"),  # said in words
    ("password", "my PIN is {}.", "9931"),
    ("password", "The PIN code was {} until May", "0042"),
    ("url-password", "dsn=postgresql://app:{}@db.internal:5432/app", "S3cr3t!"),
    ("url-password", "REDIS_URL=redis://:{}@cache:6379/0", "r3dis-pass"),
    ("curl-auth-header", 'curl -H "Authorization: Bearer {}" https://api.example.com/v1', BEARER),
    ("basic-auth", "Authorization: Basic {}", base64.b64encode(b"admin:letmein").decode()),
    ("generic-api-key", "api_key={}", GENERIC),
    ("generic-api-key", "client_secret: {}", GENERIC),
    ("generic-api-key", "SECRET_KEY = '{}'", GENERIC),
    ("generic-api-key", "https://example.com/cb?access_token={}", GENERIC),
]


@pytest.mark.parametrize(("kind", "template", "secret"), CASES)
def test_format_is_redacted_and_context_kept(kind: str, template: str, secret: str) -> None:
    text = template.format(secret)
    redacted, kinds = redact(text)
    assert redacted == template.format(_tag(kind))
    assert kinds == [kind]


@pytest.mark.parametrize(("kind", "template", "secret"), CASES)
def test_redaction_is_idempotent(kind: str, template: str, secret: str) -> None:
    once, _ = redact(template.format(secret))
    assert redact(once) == (once, [])


def test_dotenv_file() -> None:
    env = (
        "# staging\n"
        "DEBUG=true\n"
        "PORT=8080\n"
        f"DATABASE_URL=postgresql://app:Pg-{GENERIC[:12]}@db.internal:5432/app\n"
        f"OPENAI_API_KEY={OPENAI_PROJECT}\n"
        f"SLACK_BOT_TOKEN={SLACK_BOT}\n"
        f"AWS_ACCESS_KEY_ID={AWS_ID}\n"
        f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
        f"SESSION_SECRET={GENERIC}\n"
    )
    redacted, kinds = redact(env)
    for secret in (GENERIC, OPENAI_PROJECT, SLACK_BOT, AWS_ID, AWS_SECRET):
        assert secret not in redacted
    assert redacted.splitlines() == [
        "# staging",
        "DEBUG=true",
        "PORT=8080",
        "DATABASE_URL=postgresql://app:[REDACTED:url-password]@db.internal:5432/app",
        "OPENAI_API_KEY=[REDACTED:openai-api-key]",
        "SLACK_BOT_TOKEN=[REDACTED:slack-bot-token]",
        "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token]",
        "AWS_SECRET_ACCESS_KEY=[REDACTED:generic-api-key]",
        "SESSION_SECRET=[REDACTED:generic-api-key]",
    ]
    assert set(kinds) == {
        "url-password",
        "openai-api-key",
        "slack-bot-token",
        "aws-access-token",
        "generic-api-key",
    }
    assert redact(redacted) == (redacted, [])


def test_shell_history_line() -> None:
    line = (
        f'  512  curl -sS -H "Authorization: Bearer {BEARER}" '
        '-H "Content-Type: application/json" https://api.example.com/v1/items?limit=10'
    )
    redacted, kinds = redact(line)
    assert redacted == line.replace(BEARER, _tag("curl-auth-header"))
    assert kinds == ["curl-auth-header"]


def test_bearer_jwt_is_reported_as_jwt() -> None:
    redacted, kinds = redact(f"Authorization: Bearer {JWT}")
    assert redacted == "Authorization: Bearer [REDACTED:jwt]"
    assert kinds == ["jwt"]


def test_json_config_stays_valid_json() -> None:
    config = {
        "name": "aria",
        "port": 5432,
        "database": {"host": "db.internal", "user": "app", "password": "Zq9!kLm2#vX"},
        "slack": {"token": SLACK_BOT, "channel": "#general"},
        "anthropic": {"api_key": ANTHROPIC, "model": "claude-sonnet"},
        "request_id": "550e8400-e29b-41d4-a716-446655440000",
    }
    redacted, kinds = redact(json.dumps(config, indent=2))
    parsed = json.loads(redacted)
    assert parsed["database"] == {
        "host": "db.internal",
        "user": "app",
        "password": _tag("password"),
    }
    assert parsed["slack"] == {"token": _tag("slack-bot-token"), "channel": "#general"}
    assert parsed["anthropic"]["api_key"] == _tag("anthropic-api-key")
    assert parsed["request_id"] == config["request_id"]
    assert (parsed["name"], parsed["port"]) == ("aria", 5432)
    assert set(kinds) == {"password", "slack-bot-token", "anthropic-api-key"}


def test_chat_message_pasting_a_private_key() -> None:
    message = (
        f"@kai can you check this deploy key?\n\n```\n{PEM}\n```\n\nIt fails on prod-3. Thanks!"
    )
    redacted, kinds = redact(message)
    assert redacted == message.replace(PEM, _tag("private-key"))
    assert kinds == ["private-key"]


def test_private_key_cut_short_and_json_escaped() -> None:
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY[:200] + "\n\nis this enough?"
    assert redact(cut)[0] == "[REDACTED:private-key]\n\nis this enough?"
    escaped = json.dumps({"private_key": PEM + "\n", "client_email": "bot@proj.iam.example"})
    redacted, kinds = redact(escaped)
    assert json.loads(redacted) == {
        "private_key": _tag("private-key"),  # the field's whole value
        "client_email": "bot@proj.iam.example",
    }
    assert kinds == ["private-key"]


def test_log_line_with_dsn() -> None:
    line = (
        "2025-03-14T09:26:53Z ERROR db: connection refused "
        "dsn=postgresql://reporting:Wint3r-2025@10.0.4.12:5432/analytics?sslmode=require"
    )
    redacted, kinds = redact(line)
    assert "Wint3r-2025" not in redacted
    assert "postgresql://reporting:[REDACTED:url-password]@10.0.4.12:5432/analytics" in redacted
    assert redacted.startswith("2025-03-14T09:26:53Z ERROR db: connection refused dsn=")
    assert kinds == ["url-password"]


def test_each_kind_is_listed_once() -> None:
    second = "ghp_" + _fake(ALNUM, 36, 50)
    text = f"{'ghp_' + _fake(ALNUM, 36, 51)} and {second}"
    assert redact(text) == ("[REDACTED:github-pat] and [REDACTED:github-pat]", ["github-pat"])


@pytest.mark.parametrize(
    "text",
    [
        "Please reset your password before Friday.",
        "The password field is required; forgot my password again.",
        "password: see the vault entry",
        "password=${DB_PASSWORD} and api_key=<your key here>",
        'api_key = "env:ANTHROPIC_API_KEY" and token=env:SLACK_BOT_TOKEN_FOR_PROD',
        "token=your-token-here, secret: my_secret_value, token: the unit of text",
        "Request 550e8400-e29b-41d4-a716-446655440000 failed twice",
        "Fixed in commit 3f2a1b9c4d5e6f708192a3b4c5d6e7f809112233, see the diff.",
        "image sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "Docs: https://example.com/docs/v2?page=2&sort=asc#intro",
        "Clone ssh://git@github.com/org/repo.git or https://user@example.com/repo",
        "Total 4242424242 after 1.5e10 iterations on port 5432 at 10.0.0.1:8080",
        "inline image data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADU",
        "Use Bearer authentication for the API and Basic auth for the wiki.",
        "max_tokens=4096 temperature=0.2 top_p=0.9",
        "The AKIA prefix marks long-term AWS keys; eyJ starts base64 JSON.",
        "a risk-assessment-framework-document and scikit-learn-compatible-estimators",
        "author: Jane Doe\ncontributors: 12",
        "The password is rotated monthly; the password is in the vault.",
        "My office door code is 7720 and the opinion is 42 to 1.",
        "",
    ],
)
def test_ordinary_text_survives(text: str) -> None:
    assert redact(text) == (text, [])
