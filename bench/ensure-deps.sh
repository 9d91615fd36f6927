#!/usr/bin/env bash
# Installs what `make bench` compares against when missing: /usr/bin/time
# (package time) and mtail. Needs root (or sudo) only when something is missing.
set -euo pipefail
missing=()
[ -x /usr/bin/time ] || missing+=(time)
command -v mtail >/dev/null 2>&1 || missing+=(mtail)
command -v grep >/dev/null 2>&1 || missing+=(grep)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing benchmark dependencies: ${missing[*]}" >&2
"$(dirname "$0")/../scripts/apt-install-no-start.sh" "${missing[@]}"
