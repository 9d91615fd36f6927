#!/usr/bin/env bash
# CPU of the exporter at rest on the demo node (examples/demo: a fake npu-smi
# and hccn_tool, its CANN log root), nobody scraping, docs/benchmarks.md
# "CPU at rest, brought back (issue 41)". For every binary given, alternately
# and ROUNDS times: the default collectors (the hccn and npuhealth sweeps
# running their fake tools on schedule), then the same with
# --no-collector.hccn --no-collector.npuhealth. Each run reads utime+stime of
# the exporter and of its reaped children from /proc/<pid>/stat over WINDOW
# seconds after WARMUP seconds (the first sweeps, the first log read), and
# prints the exporter's own CPU in % of a core and the ratio of the two runs.
#
#   bench/idle/idle.sh [BINARY ...]        # default: build ./cmd/hccl_exporter
#   WINDOW=120 ROUNDS=2 bench/idle/idle.sh /tmp/before/hccl_exporter /tmp/after/hccl_exporter
#   SKIP_NO_SWEEPS=1 ...                   # the default collectors only
#
# Ticks are 1/CLK_TCK s (10 ms): at WINDOW=60 one tick is 0.017 % of a core,
# so use WINDOW of 120 s or more to tell 0.10 % from 0.15 %.
set -euo pipefail
cd "$(dirname "$0")/../.."
WINDOW=${WINDOW:-60}
WARMUP=${WARMUP:-10}
ROUNDS=${ROUNDS:-1}
demo=examples/demo
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
	go build -o "$work/hccl_exporter" ./cmd/hccl_exporter
	bins=("$work/hccl_exporter")
fi
hz=$(getconf CLK_TCK)

# ticks PID: "utime+stime cutime+cstime oncpu_us" (fields 14-17 of stat,
# counted after the command name's closing parenthesis; oncpu_us: the sum
# of the first field of every thread's schedstat, ns on a CPU, in µs).
ticks() {
	local s ns=0 t a
	s=$(cat "/proc/$1/stat")
	s=${s##*) }
	for t in /proc/"$1"/task/*/schedstat; do
		read -r a _ <"$t" 2>/dev/null || continue
		ns=$((ns + a))
	done
	set -- $s
	echo "$((${12} + ${13})) $((${14} + ${15})) $((ns / 1000))"
}

free_port() {
	for p in $(seq 19950 20050); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
	done
	echo "no free port in 19950-20050" >&2
	exit 1
}

# run BIN MODE: prints "own children" ticks over the window.
run() {
	local bin=$1 mode=$2 port extra=()
	port=$(free_port)
	[ "$mode" = "no-sweeps" ] && extra=(--no-collector.hccn --no-collector.npuhealth)
	rm -f "$work/state.json"
	"$bin" --web.listen-address="127.0.0.1:$port" \
		--npusmi.path="$demo/npu-smi" --hccn.path="$demo/hccn_tool" \
		--cannlog.root="$demo/log" --cannlog.screen-log-path="$demo/screen/*.log" \
		--cannlog.state-file="$work/state.json" --log.level=warn "${extra[@]}" 2>>"$work/log" &
	pid=$!
	sleep "$WARMUP"
	local a b
	a=$(ticks "$pid")
	sleep "$WINDOW"
	b=$(ticks "$pid")
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	set -- $a $b
	echo "$(($4 - $1)) $(($5 - $2)) $(($6 - $3))"
}

pct() { awk -v t="$1" -v hz="$hz" -v w="$WINDOW" 'BEGIN { printf "%.3f", 100 * t / hz / w }'; }
uspct() { awk -v t="$1" -v w="$WINDOW" 'BEGIN { printf "%.3f", 100 * t / 1e6 / w }'; }

echo "# exporter at rest on examples/demo, ${WINDOW} s windows after ${WARMUP} s, ${ROUNDS} round(s), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# own: utime+stime ticks (% of a core), and the threads' time on a CPU from schedstat (exact, % of a core)"
echo "| binary | round | default: own ticks (%) | own on CPU % | children ticks | no sweeps: own ticks (%) | own on CPU % | children ticks | own on CPU, default / no sweeps |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
for round in $(seq 1 "$ROUNDS"); do
	for bin in "${bins[@]}"; do
		run "$bin" default >"$work/r"
		read -r d dc du <"$work/r"
		if [ "${SKIP_NO_SWEEPS:-}" = 1 ]; then
			echo "| $bin | $round | $d ($(pct "$d") %) | $(uspct "$du") | $dc | | | | |"
			continue
		fi
		run "$bin" no-sweeps >"$work/r"
		read -r n nc nu <"$work/r"
		ratio=$(awk -v d="$du" -v n="$nu" 'BEGIN { if (n > 0) printf "%.1f", d / n; else print "n/a" }')
		echo "| $bin | $round | $d ($(pct "$d") %) | $(uspct "$du") | $dc | $n ($(pct "$n") %) | $(uspct "$nu") | $nc | $ratio |"
	done
done
if [ -s "$work/log" ]; then
	echo "# exporter warnings:" >&2
	sort "$work/log" | uniq -c | head -20 >&2
fi
