#!/usr/bin/env bash
# bench-ab.sh BASE PKG [ROUNDS] [BENCH]: the Go benchmarks of package PKG
# (./internal/cann/tail) built at git revision BASE against the work tree,
# run in one script, interleaved one -count at a time so that the load of a
# shared host hits both alike. Prints per benchmark the median ns/op of
# each, and new/base for the medians and for the minima (the least
# disturbed runs). Example:
#
#	scripts/bench-ab.sh 1127fbf ./internal/cann/tail 10
set -euo pipefail
base=${1:?usage: bench-ab.sh BASE PKG [ROUNDS] [BENCH]}
pkg=${2:?usage: bench-ab.sh BASE PKG [ROUNDS] [BENCH]}
rounds=${3:-5}
bench=${4:-.}
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
git -C "$top" archive "$base" | tar -x -C "$tmp/src"
(cd "$tmp/src" && go test -c -o "$tmp/base.test" "$pkg")
(cd "$top" && go test -c -o "$tmp/new.test" "$pkg")
cd "$top/$pkg" # as go test runs it: testdata/ is relative
for _ in $(seq "$rounds"); do
	for v in base new; do
		"$tmp/$v.test" -test.run '^$' -test.bench "$bench" -test.count 1 | awk -v v="$v" '/^Benchmark/ {print v, $1, $3}'
	done
done | awk '
function sorted(s, a,   n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n
}
function median(s,   a, n) { n = sorted(s, a); return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
function minimum(s,   a) { sorted(s, a); return a[1] }
{ runs[$1 " " $2] = runs[$1 " " $2] " " $3; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
END {
	printf "%-44s %13s %13s %12s %9s\n", "benchmark", "base ns/op", "new ns/op", "new/base med", "min"
	for (i = 1; i <= n; i++) {
		b = runs["base " order[i]]; w = runs["new " order[i]]
		printf "%-44s %13.0f %13.0f %12.3f %9.3f\n", order[i], median(b), median(w), median(w) / median(b), minimum(w) / minimum(b)
	}
}'
