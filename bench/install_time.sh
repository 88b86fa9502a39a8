#!/usr/bin/env bash
# How long a first install takes: each lock (runtime, development) with each installer (pip,
# the way `make` installed before; uv, the way it does now), from a cold cache. Each run gets a
# fresh venv and empty pip and uv caches in a temporary folder, and pip's site configuration is
# ignored, so every wheel comes from the package registry as on a new machine. Needs the
# network; its speed varies from run to run (bench/README.md, "Installing the dependencies").
#
#   bench/install_time.sh                 # pip and uv, runtime and development lock
#   bench/install_time.sh uv              # uv only
#   LOCKS=run bench/install_time.sh       # the runtime lock only
set -euo pipefail
cd "$(dirname "$0")/.."
installers=("$@")
[ ${#installers[@]} -gt 0 ] || installers=(pip uv)
read -r -a locks <<<"${LOCKS:-run dev}"
PYTHON=${PYTHON:-python3}

# pip as the Makefile ran it before uv: the lock, then the project (editable).
install_pip() {  # venv lockfile
    "$PYTHON" -m venv "$1"
    "$1/bin/python" -m pip install --disable-pip-version-check --require-hashes --no-deps -r "$2"
    "$1/bin/python" -m pip install --disable-pip-version-check --no-deps --no-build-isolation -e .
}

# uv as `make run` / `make test` install now: pip puts uv in, uv installs the lock.
install_uv() {  # venv lockfile
    local target=install
    [ "$2" = requirements-dev.lock ] && target=install-dev
    make --no-print-directory PYTHON="$PYTHON" VENV="$1" "$target"
}

for installer in "${installers[@]}"; do
    for lock in "${locks[@]}"; do
        case $lock in
            run) lockfile=requirements.lock ;;
            dev) lockfile=requirements-dev.lock ;;
            *) echo "LOCKS: run and/or dev, not $lock" >&2; exit 2 ;;
        esac
        work=$(mktemp -d "${TMPDIR:-/tmp}/animahub-install.XXXXXX")
        # wall time, and the CPU time of everything the install ran (user + system): the
        # network and the machine's other load show in the first, much less in the second
        TIMEFORMAT='%R %U %S'
        # (time's report goes where the timed command's stderr goes: so the install's own
        # output is redirected one level further in, and the report to $work/time)
        { time { (
            unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_CONSTRAINT
            unset UV_INDEX_URL UV_EXTRA_INDEX_URL UV_FIND_LINKS
            export PIP_CONFIG_FILE=/dev/null PIP_CACHE_DIR="$work/pip-cache" \
                UV_CACHE_DIR="$work/uv-cache" UV_NO_CONFIG=1
            "install_$installer" "$work/venv" "$lockfile"
        ) >"$work/log" 2>&1; }; } 2>"$work/time" \
            || { echo "failed: $installer $lockfile, see $work/log" >&2; exit 1; }
        read -r wall user system <"$work/time"
        packages=$("$work/venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
            | tail -n +3 | wc -l)
        size=$(du -sm "$work/venv" | cut -f1)
        printf '%-3s %-22s %6.1f s wall %6.1f s cpu  %3d packages  %5d MB venv\n' "$installer" \
            "$lockfile" "$wall" "$(echo "$user + $system" | bc)" "$packages" "$size"
        rm -rf "$work"
    done
done
