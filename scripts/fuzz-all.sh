#!/usr/bin/env bash
# Runs every Fuzz* target of the module for a short time each.
set -euo pipefail
fuzztime=${1:-20s}
go list -f '{{.Dir}} {{.ImportPath}}' ./... | while read -r dir pkg; do
	grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}' | while read -r fn; do
		echo "== $pkg $fn ($fuzztime)"
		go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$fuzztime" "$pkg"
	done
done
