#!/usr/bin/env bash
# Measures what the worst-case node costs a real Prometheus: one exporter on a
# generated 16 NPU × 2 die / 64 process / 8 communicator node, scraped as
# TARGETS distinct targets (same address, distinct `node` label, so every
# target is its own set of series), with the project's rules loaded. Prints
# head series, Prometheus RSS and heap, bytes per series and the rule groups'
# evaluation time. Loopback only; stops what it starts.
#   bench/scale-prometheus.sh [TARGETS] [SECONDS]     (defaults 100, 75)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=${1:-100}
secs=${2:-75}
command -v prometheus >/dev/null || { echo "needs prometheus (apt-get install -y prometheus)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
go build -o "$work/hccl_exporter" ./cmd/hccl_exporter
go run ./bench/gen -out "$work/node" -npus 16 -chips 2 -procs 64 -comms 8 >/dev/null
ep=$(free_port)
"$work/hccl_exporter" --web.listen-address="127.0.0.1:$ep" --npusmi.path="$work/node/npu-smi" \
	--cannlog.root="$work/node/log" --log.level=error &
pids+=($!)

{
	echo "global: {scrape_interval: 10s, scrape_timeout: 9s, evaluation_interval: 10s}"
	echo "rule_files: ['$PWD/alerts/hccl_exporter.rules.yml']"
	echo "scrape_configs:"
	echo "  - job_name: hccl_exporter"
	echo "    static_configs:"
	for i in $(seq 1 "$targets"); do
		echo "      - targets: ['127.0.0.1:$ep']"
		echo "        labels: {node: n$i, cluster: c$((i % 4))}"
	done
} >"$work/prometheus.yml"
pp=$(free_port)
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$pp" --log.level=error &
pids+=($!)
sleep "$secs"
q() { curl -fsS "http://127.0.0.1:$pp/api/v1/query" --data-urlencode "query=$1" |
	python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")'; }
curl -fsS "http://127.0.0.1:$pp/metrics" >"$work/prom-self.txt"
head=$(awk '/^prometheus_tsdb_head_series /{print $2}' "$work/prom-self.txt")
heap=$(awk '/^go_memstats_heap_inuse_bytes /{print $2}' "$work/prom-self.txt")
up=$(q 'count(up{job="hccl_exporter"} == 1)')
scrape=$(q 'quantile(0.99, scrape_duration_seconds{job="hccl_exporter"})')
samples=$(q 'sum(scrape_samples_scraped{job="hccl_exporter"})')
rules=$(curl -fsS "http://127.0.0.1:$pp/api/v1/rules" | python3 -c '
import json,sys
gs = json.load(sys.stdin)["data"]["groups"]
for g in gs:
    print("  %-28s %.1f ms" % (g["name"], g["evaluationTime"]*1000))
rs = sorted(((r["evaluationTime"], r["name"]) for g in gs for r in g["rules"]), reverse=True)[:5]
print("slowest rules:")
for t, n in rs:
    print("  %-50s %.1f ms" % (n, t*1000))')
cat <<OUT
targets up:            $up of $targets (worst-case node each, scraped every 10s)
samples per scrape:    $samples (all targets)
head series:           $head
Prometheus RSS:        $(awk -v b="$(awk '/VmRSS/{print $2*1024}' "/proc/${pids[1]}/status")" 'BEGIN{printf "%.0f MiB", b/1048576}')
Prometheus heap inuse: $(awk -v b="$heap" 'BEGIN{printf "%.0f MiB", b/1048576}')
heap bytes / series:   $(awk -v b="$heap" -v s="$head" 'BEGIN{printf "%.0f", b/s}')
scrape p99:            $scrape s
rule groups (last evaluation):
$rules
OUT
