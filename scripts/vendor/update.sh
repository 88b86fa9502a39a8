#!/usr/bin/env bash
# Refresh the dashboard's front-end libraries (hub/api/static/vendor) from the npm registry,
# at the versions package-lock.json pins (its integrity hashes are checked by `npm ci`).
# Served by the hub itself: nothing is fetched from a CDN at run time. To move a version,
# edit package.json, run `npm install --package-lock-only` here, then this script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../hub/api/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$work/"
(cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --silent)
cp "$work/node_modules/chart.js/dist/chart.umd.min.js" "$out/"
cp "$work/node_modules/cytoscape/dist/cytoscape.min.js" "$out/"
{
  echo "chart.js $(node -p "require('$work/node_modules/chart.js/package.json').version") (MIT)"
  cat "$work/node_modules/chart.js/LICENSE.md"
  echo
  echo "@kurkle/color, bundled in chart.js (MIT)"
  cat "$work/node_modules/@kurkle/color/LICENSE.md"
  echo
  echo "cytoscape $(node -p "require('$work/node_modules/cytoscape/package.json').version") (MIT)"
  cat "$work/node_modules/cytoscape/LICENSE"
} > "$out/LICENSES.txt"
(cd "$out" && sha256sum chart.umd.min.js cytoscape.min.js > SHA256SUMS)
echo "vendored into $out:" && cat "$out/SHA256SUMS"
