#!/usr/bin/env bash
# Make sure Debian's Chromium is installed for the browser tests (tests/browser) and print
# its path on stdout. Idempotent: installs the Debian package only if it is missing (needs
# root or sudo). Playwright drives this binary; it never downloads a browser of its own
# (`playwright install` needs hosts a closed network does not reach). Everything else goes
# to stderr.
set -euo pipefail
CHROMIUM=/usr/bin/chromium

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if [ ! -x "$CHROMIUM" ]; then
  echo "installing chromium (Debian package)" >&2
  as_root apt-get update -qq >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium >&2
fi
"$CHROMIUM" --version >&2
echo "$CHROMIUM"
