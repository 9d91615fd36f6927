#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine: promtool
# (package prometheus), Alertmanager and amtool (prometheus-alertmanager) for
# the rule tests and the end-to-end tests, VictoriaMetrics with vmalert
# (victoria-metrics) for the scale-out test and the rules' vmalert check, and
# chromium to render diagnose's HTML report headless. Needs root (or sudo)
# only when something is missing. The host's daemons are left alone: the
# packages are installed under a policy-rc.d that forbids starts, and the
# tests run their own instances on loopback ports.
set -euo pipefail
missing=()
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
{ command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1; } || missing+=(prometheus-alertmanager)
{ command -v victoria-metrics >/dev/null 2>&1 && command -v vmalert >/dev/null 2>&1; } || missing+=(victoria-metrics)
command -v amtool >/dev/null 2>&1 || [[ " ${missing[*]} " == *" prometheus-alertmanager "* ]] || missing+=(prometheus-alertmanager)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing test dependencies: ${missing[*]}" >&2
"$(dirname "$0")/apt-install-no-start.sh" "${missing[@]}"
