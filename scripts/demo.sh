#!/usr/bin/env bash
# Runs hccl_exporter on the bundled demo data — a fake npu-smi printing an
# 8-NPU Atlas 800T A2 table, a fake hccn_tool answering for its 8 RoCE NICs,
# a CANN log root and a training screen log — and shows its metrics. No NPU
# needed.
#   scripts/demo.sh           start, print the interesting metrics, stop
#   scripts/demo.sh --serve   keep serving on :9842 (Ctrl-C to stop)
# DEMO_PORT=N picks the port of either (make demo DEMO_PORT=N, make run-demo
# DEMO_PORT=N), e.g. where an exporter already serves on 9842.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=examples/demo
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
pid=
go build -o "$work/hccl_exporter" ./cmd/hccl_exporter

port=${DEMO_PORT:-9842}
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
	echo "DEMO_PORT=$port: expected a TCP port from 1 to 65535" >&2
	exit 2
fi
if [ "${1:-}" != "--serve" ] && [ -z "${DEMO_PORT:-}" ]; then
	# A free loopback port, so the demo never collides with a running exporter.
	for p in $(seq 19842 19942); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then port=$p; break; fi
	done
fi
# The demo node as a real one looks to the exporter, so it warns about
# nothing of its own making: $demo/proc is the node's /proc for the
# processes its npu-smi lists (<pid>/comm, as on the host: npu-smi's pids
# are not another pid namespace's), and the node's time zone is the one
# its CANN logs were printed in (a capture from a UTC+08:00 node).
export TZ=Asia/Shanghai
args=(
	--web.listen-address="127.0.0.1:$port"
	--npusmi.path="$demo/npu-smi"
	--hccn.path="$demo/hccn_tool"
	--cannlog.root="$demo/log"
	--cannlog.screen-log-path="$demo/screen/*.log"
	--cannlog.state-file="$work/state.json"
	--path.procfs="$PWD/$demo/proc"
)
if [ "${1:-}" = "--serve" ]; then
	echo "serving demo metrics on http://127.0.0.1:$port/metrics (Ctrl-C to stop)" >&2
	"$work/hccl_exporter" "${args[@]}" --log.level=info &
	pid=$!
	wait "$pid"
	exit
fi
"$work/hccl_exporter" "${args[@]}" --log.level=warn &
pid=$!
for _ in $(seq 1 50); do
	curl -fsS "http://127.0.0.1:$port/metrics" -o "$work/metrics.txt" 2>/dev/null && break
	sleep 0.2
done
sleep 1.5 # let the log follower read the demo logs once
curl -fsS "http://127.0.0.1:$port/metrics" -o "$work/metrics.txt"
echo "# hccl_exporter demo: $(wc -l <"$work/metrics.txt") lines of metrics (the exporter stops with this script; \`make run-demo\` keeps it serving on :9842)."
echo "# Excerpt for NPUs 0-1 and their processes. 210001 on NPU 0 sets HCCL_RDMA_QPS_PER_CONNECTION=16 (17 QPs per connection):"
echo "# the link setup still ahead does not fit in NPU 0's free HBM, so its headroom is negative, and its screen log holds"
echo "# the EI0011 it then reported (\`go run ./cmd/hccl_exporter diagnose examples/demo\` names it the root cause):"
grep -E '^(ascend_npu_processes|ascend_npu_hbm_(used|total)_bytes|hccl_exporter_npu_smi_up|hccl_exporter_hccn_tool_up|ascend_roce_(link_up|link_down_events_total|active_queue_pairs|retransmitted_packets_total|qp_status_errors_total)|ascend_roce_network_health\{.*status="Success"|hccl_link_setup_headroom_bytes|hccl_link_setup_queue_pair_memory_bytes|hccl_link_setup_pending_queue_pairs|hccl_ccl_buffer_bytes|hccl_env_rdma_qps_per_connection|hccl_env_buffsize_bytes|hccl_process_info|hccl_communicator_(info|ranks|servers|processes)|hccl_fault_events_total\{code="EI0011"|hccl_exporter_collector_success)' "$work/metrics.txt" |
	grep -E 'npu="[01]"|pid="21000[12]"|settings=|communicator=|^[a-z_]+(\{[^}]*collector=|\{code=| )' |
	grep -v 'source="plog"'
