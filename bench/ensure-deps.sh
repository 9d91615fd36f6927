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
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian package starts an mtail service; the benchmark runs its own.
$sudo systemctl stop mtail >/dev/null 2>&1 || $sudo service mtail stop >/dev/null 2>&1 || true
