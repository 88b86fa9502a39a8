# ruff: noqa: E501  (FORMATS is a table: one format a line)
"""How many pasted credentials the hub's redaction removes, and how much ordinary talk it
spares: recall over generated credentials, false positives over every LoCoMo turn.

The credentials are generated from each provider's documented shape (its prefix, length
and alphabet as the provider's docs or its issued keys show them), written here without
looking at the detector's rules, so a rule that is narrower than the real format shows up
as a miss. Each value is put in the contexts a person pastes it in: a sentence naming the
provider, an env line with the variable the provider's docs use, a JSON config, and for
formats whose prefix marks them, a bare sentence. A sample counts as caught when the value
is no longer in the redacted text (a partial redaction that leaves it readable is a miss).

False positives: `redact` on every LoCoMo turn (speaker and text, as bench/locomo_data.py
reads them); a turn counts when anything in it was redacted.

    .venv/bin/python bench/secrets_recall.py --data ../shared/bench/locomo
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locomo_data import load_all

from hub.redaction.redact import StreamRedactor, redact

UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
DIGITS = string.digits
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64URL = ALNUM + "-_"
B64 = ALNUM + "+/"
BASE32 = UPPER + "234567"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
Gen = Callable[[random.Random], str]


def chars(alphabet: str, n: int) -> Gen:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(n))


def cat(*parts: str | Gen) -> Gen:
    def make(rng: random.Random) -> str:
        return "".join(p if isinstance(p, str) else p(rng) for p in parts)

    return make


def digits_between(low: int, high: int) -> Gen:
    return lambda rng: str(rng.randint(1, 9)) + chars(DIGITS, rng.randint(low, high) - 1)(rng)


def uuid4(rng: random.Random) -> str:
    h = chars(HEX, 32)(rng)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def jwt(rng: random.Random) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    header = part({"alg": rng.choice(["HS256", "RS256"]), "typ": "JWT"})
    claims = {
        "sub": chars(DIGITS, 8)(rng),
        "iat": rng.randint(1_600_000_000, 1_800_000_000),
        "name": "x",
    }
    return f"{header}.{part(claims)}.{chars(B64URL, 43)(rng)}"


def pem(label: str) -> Gen:
    def make(rng: random.Random) -> str:
        body = "\n".join(chars(B64, 64)(rng) for _ in range(8))
        return f"-----BEGIN {label}-----\n{body}\n{chars(B64, 20)(rng)}=\n-----END {label}-----"

    return make


def discord_bot(rng: random.Random) -> str:
    user_id = digits_between(18, 19)(rng)
    first = base64.b64encode(user_id.encode()).decode().rstrip("=")
    return f"{first}.{chars(B64URL, 6)(rng)}.{chars(B64URL, 38)(rng)}"


def basic_auth(rng: random.Random) -> str:
    pair = f"{chars(LOWER, 6)(rng)}:{chars(ALNUM, 14)(rng)}"
    return base64.b64encode(pair.encode()).decode()


@dataclass(frozen=True)
class Format:
    name: str  # the provider's name for it
    make: Gen
    env: str = ""  # the variable the provider's docs use, "" if none
    bare: bool = False  # a prefix that marks it on its own
    # Where it sits in the sentence context ("{}" is the value), when not an env var style.
    sentence: str = "here is the {name}: {} - can you check why it fails?"


# One format a line, so the table reads as one (long lines here only).
# fmt: off
FORMATS: tuple[Format, ...] = (
    # Cloud
    Format("AWS access key id", cat("AKIA", chars(BASE32, 16)), "AWS_ACCESS_KEY_ID", True),
    Format("AWS temporary access key id", cat("ASIA", chars(BASE32, 16)), "AWS_ACCESS_KEY_ID", True),
    Format("AWS secret access key", chars(B64, 40), "AWS_SECRET_ACCESS_KEY"),
    Format("Google API key", cat("AIza", chars(B64URL, 35)), "GOOGLE_API_KEY", True),
    Format("Google OAuth client secret", cat("GOCSPX-", chars(B64URL, 28)), "GOOGLE_CLIENT_SECRET", True),
    Format("GCP service account private key", pem("PRIVATE KEY"), "", True),
    Format("Azure storage account key", cat(chars(B64, 86), "=="), "AZURE_STORAGE_KEY"),
    Format("DigitalOcean personal access token", cat("dop_v1_", chars(HEX, 64)), "DIGITALOCEAN_TOKEN", True),
    Format("DigitalOcean OAuth token", cat("doo_v1_", chars(HEX, 64)), "DIGITALOCEAN_TOKEN", True),
    Format("Alibaba Cloud AccessKey ID", cat("LTAI", chars(ALNUM, 20)), "ALIBABA_CLOUD_ACCESS_KEY_ID", True),
    Format("HashiCorp Vault service token", cat("hvs.", chars(B64URL, 90)), "VAULT_TOKEN", True),
    Format("Terraform Cloud API token", cat(chars(ALNUM, 14), ".atlasv1.", chars(ALNUM, 67)), "TFE_TOKEN", True),
    Format("Pulumi access token", cat("pul-", chars(HEX, 40)), "PULUMI_ACCESS_TOKEN", True),
    Format("Databricks personal access token", cat("dapi", chars(HEX, 32)), "DATABRICKS_TOKEN", True),
    Format("Doppler service token", cat("dp.st.", chars(LOWER, 8), ".", chars(ALNUM, 40)), "DOPPLER_TOKEN", True),
    Format("Heroku API key", uuid4, "HEROKU_API_KEY"),
    Format("Cloudflare API token", chars(B64URL, 40), "CLOUDFLARE_API_TOKEN"),
    Format("Age secret key", cat("AGE-SECRET-KEY-1", chars(BECH32, 58)), "SOPS_AGE_KEY", True),
    # Source hosting and packages
    Format("GitHub personal access token", cat("ghp_", chars(ALNUM, 36)), "GITHUB_TOKEN", True),
    Format("GitHub OAuth token", cat("gho_", chars(ALNUM, 36)), "GITHUB_TOKEN", True),
    Format("GitHub user-to-server token", cat("ghu_", chars(ALNUM, 36)), "GITHUB_TOKEN", True),
    Format("GitHub server-to-server token", cat("ghs_", chars(ALNUM, 36)), "GITHUB_TOKEN", True),
    Format("GitHub refresh token", cat("ghr_", chars(ALNUM, 76)), "GITHUB_REFRESH_TOKEN", True),
    Format("GitHub fine-grained token", cat("github_pat_", chars(ALNUM, 22), "_", chars(ALNUM, 59)), "GH_TOKEN", True),
    Format("GitLab personal access token", cat("glpat-", chars(B64URL, 20)), "GITLAB_TOKEN", True),
    Format("GitLab pipeline trigger token", cat("glptt-", chars(HEX, 40)), "CI_TRIGGER_TOKEN", True),
    Format("GitLab runner token", cat("glrt-", chars(B64URL, 20)), "RUNNER_TOKEN", True),
    Format("npm access token", cat("npm_", chars(ALNUM, 36)), "NPM_TOKEN", True),
    Format("PyPI API token", cat("pypi-AgEIcHlwaS5vcmc", chars(B64URL, 70)), "TWINE_PASSWORD", True),
    Format("Docker Hub access token", cat("dckr_pat_", chars(B64URL, 27)), "DOCKERHUB_TOKEN", True),
    Format("Atlassian API token", cat("ATATT3xFfGF0", chars(B64URL, 171), "=", chars(HEX.upper(), 8)), "JIRA_API_TOKEN", True),
    Format("Linear API key", cat("lin_api_", chars(ALNUM, 40)), "LINEAR_API_KEY", True),
    Format("Postman API key", cat("PMAK-", chars(HEX, 24), "-", chars(HEX, 34)), "POSTMAN_API_KEY", True),
    Format("Sentry user auth token", cat("sntryu_", chars(HEX, 64)), "SENTRY_AUTH_TOKEN", True),
    Format("Grafana service account token", cat("glsa_", chars(ALNUM, 32), "_", chars(HEX, 8)), "GRAFANA_TOKEN", True),
    Format("New Relic user API key", cat("NRAK-", chars(UPPER + DIGITS, 27)), "NEW_RELIC_API_KEY", True),
    Format("Figma personal access token", cat("figd_", chars(B64URL, 40)), "FIGMA_TOKEN", True),
    # Chat and messaging
    Format("Slack bot token", cat("xoxb-", digits_between(10, 13), "-", digits_between(10, 13), "-", chars(ALNUM, 24)), "SLACK_BOT_TOKEN", True),
    Format("Slack user token", cat("xoxp-", digits_between(10, 13), "-", digits_between(10, 13), "-", digits_between(10, 13), "-", chars(HEX, 32)), "SLACK_USER_TOKEN", True),
    Format("Slack app-level token", cat("xapp-1-A", chars(UPPER + DIGITS, 10), "-", chars(DIGITS, 13), "-", chars(HEX, 64)), "SLACK_APP_TOKEN", True),
    Format("Slack incoming webhook", cat("https://hooks.slack.com/services/T", chars(UPPER + DIGITS, 8), "/B", chars(UPPER + DIGITS, 10), "/", chars(ALNUM, 24)), "SLACK_WEBHOOK_URL", True),
    Format("Discord bot token", discord_bot, "DISCORD_BOT_TOKEN"),
    Format("Discord webhook", cat("https://discord.com/api/webhooks/", digits_between(18, 19), "/", chars(B64URL, 68)), "DISCORD_WEBHOOK_URL", True),
    Format("Telegram bot token", cat(digits_between(8, 10), ":AA", chars(B64URL, 33)), "TELEGRAM_BOT_TOKEN", True),
    Format("Twilio API key SID", cat("SK", chars(HEX, 32)), "TWILIO_API_KEY", True),
    Format("SendGrid API key", cat("SG.", chars(B64URL, 22), ".", chars(B64URL, 43)), "SENDGRID_API_KEY", True),
    Format("Mailgun API key", cat("key-", chars(HEX, 32)), "MAILGUN_API_KEY"),
    Format("Mailchimp API key", cat(chars(HEX, 32), "-us", digits_between(1, 2)), "MAILCHIMP_API_KEY"),
    Format("LINE channel access token", cat(chars(B64, 171), "="), "LINE_CHANNEL_ACCESS_TOKEN"),
    # Payments and commerce
    Format("Stripe secret key", cat("sk_live_", chars(ALNUM, 99)), "STRIPE_SECRET_KEY", True),
    Format("Stripe test secret key", cat("sk_test_", chars(ALNUM, 24)), "STRIPE_SECRET_KEY", True),
    Format("Stripe restricted key", cat("rk_live_", chars(ALNUM, 24)), "STRIPE_API_KEY", True),
    Format("Square access token", cat("EAAA", chars(B64URL, 60)), "SQUARE_ACCESS_TOKEN", True),
    Format("Shopify admin access token", cat("shpat_", chars(HEX, 32)), "SHOPIFY_ACCESS_TOKEN", True),
    Format("Shopify shared secret", cat("shpss_", chars(HEX, 32)), "SHOPIFY_API_SECRET", True),
    Format("Shopify custom app token", cat("shpca_", chars(HEX, 32)), "SHOPIFY_ACCESS_TOKEN", True),
    # AI providers
    Format("OpenAI API key (legacy)", cat("sk-", chars(ALNUM, 20), "T3BlbkFJ", chars(ALNUM, 20)), "OPENAI_API_KEY", True),
    Format("OpenAI project API key", cat("sk-proj-", chars(B64URL, 156)), "OPENAI_API_KEY", True),
    Format("Anthropic API key", cat("sk-ant-api03-", chars(B64URL, 93), "AA"), "ANTHROPIC_API_KEY", True),
    Format("Hugging Face token", cat("hf_", chars(UPPER + LOWER, 34)), "HF_TOKEN", True),
    Format("Groq API key", cat("gsk_", chars(ALNUM, 52)), "GROQ_API_KEY", True),
    Format("Perplexity API key", cat("pplx-", chars(ALNUM, 48)), "PERPLEXITY_API_KEY", True),
    Format("Replicate API token", cat("r8_", chars(ALNUM, 37)), "REPLICATE_API_TOKEN", True),
    Format("DeepSeek API key", cat("sk-", chars(HEX, 32)), "DEEPSEEK_API_KEY", True),
    Format("Mistral API key", chars(ALNUM, 32), "MISTRAL_API_KEY"),
    Format("Notion integration token", cat("ntn_", chars(DIGITS, 11), chars(ALNUM, 35)), "NOTION_TOKEN", True),
    # Generic credentials
    Format("JSON Web Token", jwt, "ACCESS_TOKEN", True),
    Format("RSA private key", pem("RSA PRIVATE KEY"), "", True),
    Format("OpenSSH private key", pem("OPENSSH PRIVATE KEY"), "", True),
    Format("EC private key", pem("EC PRIVATE KEY"), "", True),
    Format("PGP private key block", pem("PGP PRIVATE KEY BLOCK"), "", True),
    Format("Database URL password", chars(ALNUM + "!%*", 16), "", False, "DATABASE_URL=postgres://app:{}@db.internal:5432/app"),
    Format("Basic auth header", basic_auth, "", False, 'curl -H "Authorization: Basic {}" https://intranet'),
    Format("Bearer header", chars(B64URL, 48), "", False, 'curl -H "Authorization: Bearer {}" https://api'),
    Format("password after pass:", cat(chars(LOWER, 6), chars(DIGITS, 2), "!"), "", False, "wifi pass: {} (office)"),
    Format("password after pw", cat(chars(UPPER, 1), chars(LOWER, 7), chars(DIGITS, 3)), "", False, "router pw {} thanks"),
    Format("password in words", cat(chars(LOWER, 7), chars(DIGITS, 2)), "", False, "my password is {} but don't share it"),
    Format("PIN in words", chars(DIGITS, 4), "", False, "the door PIN is {}."),
    Format("password in JSON", chars(ALNUM + "#$!", 14), "", False, '{{"user": "app", "password": "{}"}}'),
)
# fmt: on


def contexts(fmt: Format, value: str) -> list[str]:
    if "{name}" not in fmt.sentence:
        return [fmt.sentence.format(value)]
    found = [fmt.sentence.replace("{name}", fmt.name.lower()).format(value)]
    if fmt.env:
        found.append(f"export {fmt.env}={value}")
        found.append(json.dumps({fmt.env.lower(): value}, indent=2))
    if fmt.bare:
        found.append(f"it stopped working yesterday: {value}.")
    return found


def recall(samples: int, seed: int) -> tuple[list[dict[str, Any]], float, float]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    caught = total = 0
    spent = 0.0
    for fmt in FORMATS:
        got = tried = 0
        missed: list[str] = []
        for _ in range(samples):
            value = fmt.make(rng)
            for text in contexts(fmt, value):
                start = time.process_time()
                clean = redact(text)[0]
                spent += time.process_time() - start
                tried += 1
                if value in clean:
                    missed.append(text)
                else:
                    got += 1
        rows.append({"format": fmt.name, "samples": tried, "caught": got, "missed": missed[:2]})
        caught, total = caught + got, total + tried
    return rows, caught / total, spent / total * 1e6


def false_positives(data: Path) -> dict[str, Any]:
    turns = [turn.text for conv in load_all(data, "") for turn in conv.turns]
    flagged: list[tuple[list[str], str]] = []
    start = time.process_time()
    for text in turns:
        _, kinds = redact(text)
        if kinds:
            flagged.append((kinds, text))
    spent = time.process_time() - start
    return {
        "turns": len(turns),
        "flagged": len(flagged),
        "rate": len(flagged) / max(len(turns), 1),
        "us_per_turn": spent / max(len(turns), 1) * 1e6,
        "examples": flagged[:10],
    }


def stream_cost(data: Path, replies: int = 200) -> dict[str, float]:
    """A reply streamed as a model streams it (pieces of about 4 characters, a token each):
    the stream redactor redacts the whole reply so far at every piece."""
    turns = [turn.text for conv in load_all(data, "") for turn in conv.turns]
    texts = [" ".join(turns[i : i + 6]) for i in range(0, min(len(turns), replies * 6), 6)]
    pieces = 0
    start = time.process_time()
    for text in texts:
        stream = StreamRedactor()
        for at in range(0, len(text), 4):
            stream.feed(text[at : at + 4])
            pieces += 1
        stream.rest()
    spent = time.process_time() - start
    chars = sum(len(text) for text in texts) / max(len(texts), 1)
    return {
        "replies": len(texts),
        "chars_per_reply": chars,
        "ms_per_reply": spent / max(len(texts), 1) * 1e3,
        "us_per_piece": spent / max(pieces, 1) * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo JSON files")
    parser.add_argument("--samples", type=int, default=20, help="values per format")
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    redact("warm up: the rule set compiles on first use")
    rows, overall, us_sample = recall(args.samples, args.seed)
    fp = false_positives(args.data)
    print("| format | samples | caught |\n|---|---:|---:|")
    for row in rows:
        print(f"| {row['format']} | {row['samples']} | {row['caught']} |")
        for text in row["missed"]:
            print(f"|   missed: {text[:90]!r} | | |")
    print(
        f"\n{len(FORMATS)} formats, recall {overall:.4f} (at least 0.98: "
        f"{'met' if overall >= 0.98 else 'NOT met'}); {us_sample:.0f} us of CPU per sample"
    )
    print(
        f"LoCoMo: {fp['flagged']} of {fp['turns']} turns redacted, false-positive rate "
        f"{fp['rate']:.4%} (at most 0.1 %: {'met' if fp['rate'] <= 0.001 else 'NOT met'}); "
        f"{fp['us_per_turn']:.0f} us of CPU per turn"
    )
    for kinds, text in fp["examples"]:
        print(f"  flagged {kinds}: {text[:120]!r}")
    streamed = stream_cost(args.data)
    print(
        f"streamed: {streamed['replies']} replies of {streamed['chars_per_reply']:.0f} "
        f"characters in 4-character pieces, {streamed['ms_per_reply']:.1f} ms of CPU per "
        f"reply, {streamed['us_per_piece']:.0f} us per piece"
    )
    if args.json:
        report = {"formats": rows, "recall": overall, "us_per_sample": us_sample, **fp}
        report["stream"] = streamed
        report["command"] = " ".join(["bench/secrets_recall.py", *sys.argv[1:]])
        args.json.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
