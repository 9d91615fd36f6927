#!/usr/bin/env bash
# Installs Debian packages without starting any service: Debian's packaging
# starts a daemon right after install unless /usr/sbin/policy-rc.d forbids it
# (exit 101). A policy of our own is put in place for the install only, and
# any policy the host already had is restored afterwards, so the host's
# services are never started, stopped or reconfigured by a test set-up.
# Usage: apt-install-no-start.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
policy=/usr/sbin/policy-rc.d
saved=""
if [ -e "$policy" ]; then
	saved=$(mktemp)
	$sudo cp -p "$policy" "$saved"
fi
restore() {
	if [ -n "$saved" ]; then
		$sudo cp -p "$saved" "$policy"
		rm -f "$saved"
	else
		$sudo rm -f "$policy"
	fi
}
trap restore EXIT
printf '#!/bin/sh\n# hccl_exporter test set-up: no service starts during this install.\nexit 101\n' | $sudo tee "$policy" >/dev/null
$sudo chmod 755 "$policy"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
