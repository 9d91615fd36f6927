#!/usr/bin/env bash
# Scale measurement of hccl_exporter (docs/scale.md): builds the exporter,
# generates node fixtures with bench/gen, runs the real binary on loopback
# against each and prints series per family and in total (checked against the
# formula), response sizes, scrape latency, CPU per scrape and RSS.
# Exits non-zero when a family does not match the formula.
#   bench/scale.sh [-scrapes 200] [-concurrency 10] [-points NAME,...] [-bin PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./bench/scale "$@"
