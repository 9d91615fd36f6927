# Performance benchmarks (docs/benchmarks.md), included by the Makefile.
#   make bench                    # full run: 100 MB and 1 GB trees, 30 s CPU windows (~6-8 min)
#   make bench BENCH_SIZE=small   # quick run (~2 min)
# Results also go to bench/out/*.json. Trees are generated once and kept in
# bench/out (1.2 GB for the full run; `make clean` removes them).

BENCH_SIZE ?= full
BENCH_OUT  ?= bench/out
ifeq ($(BENCH_SIZE),small)
BENCH_INGEST_SIZES ?= 20M,100M
BENCH_NODE_FLAGS   ?= -idle 10s -busy 10s -sequential 50 -per-scraper 50
else
BENCH_INGEST_SIZES ?= 100M,1G
BENCH_NODE_FLAGS   ?= -idle 30s -busy 30s -sequential 200 -per-scraper 100
endif
BENCH_ROUNDS ?= 3

.PHONY: bench-tail bench-deps bench-tools bench-ingest bench-node bench-node-uncached bench-node-compare bench-all

bench-deps:
	./bench/ensure-deps.sh

bench-tools: build
	@mkdir -p $(BENCH_OUT)/bin
	$(GO) build -o $(BENCH_OUT)/bin/ingest ./bench/ingest
	$(GO) build -o $(BENCH_OUT)/bin/node ./bench/node

# One full pass over generated CANN log trees: the collector's ingest path
# and diagnose versus grep -rcE and mtail --one_shot; counts must agree.
bench-ingest: bench-deps bench-tools
	$(BENCH_OUT)/bin/ingest run -exporter ./$(BINARY) -sizes $(BENCH_INGEST_SIZES) -rounds $(BENCH_ROUNDS) \
		-work $(BENCH_OUT) -json $(BENCH_OUT)/ingest.json

# Steady-state CPU and /metrics latency of the real binary on a worst-case
# node with 10 000 followed files.
bench-node: bench-tools
	$(BENCH_OUT)/bin/node -exporter ./$(BINARY) -work $(BENCH_OUT)/node-fixture $(BENCH_NODE_FLAGS) -json $(BENCH_OUT)/node.json

# The same node with every scrape gathering anew (--web.scrape-cache-ttl=0s):
# what a Prometheus scraping every 15-30 s pays on each scrape. Targets:
# exporter CPU per scrape <= 8 ms and sequential p99 <= 25 ms; the concurrent
# runs are printed without one (docs/benchmarks.md says why).
bench-node-uncached: bench-tools
	$(BENCH_OUT)/bin/node -exporter ./$(BINARY) -work $(BENCH_OUT)/node-fixture -steady=false $(BENCH_NODE_FLAGS) \
		-label "--web.scrape-cache-ttl=0s" -extra "--web.scrape-cache-ttl=0s" \
		-target-p99 0 -target-seq-p99 25ms -target-cpu 8ms -target-for "uncached scrapes" -json $(BENCH_OUT)/node-uncached.json

# Uncached scrapes of this tree's binary and of BASELINE_REV's, alternated
# BENCH_ROUNDS times each: every run with the CPU the host stole meanwhile,
# then the medians and their ratio.
#   make bench-node-compare BASELINE_REV=v0.3.0 [BENCH_SIZE=small]
BASELINE_REV ?= HEAD~1
bench-node-compare: bench-tools
	rm -rf $(BENCH_OUT)/baseline-src
	git worktree add --detach $(BENCH_OUT)/baseline-src $(BASELINE_REV)
	cd $(BENCH_OUT)/baseline-src && $(GO) build -o $(CURDIR)/$(BENCH_OUT)/bin/hccl_exporter-baseline ./cmd/hccl_exporter; \
		status=$$?; cd $(CURDIR) && git worktree remove --force $(BENCH_OUT)/baseline-src; exit $$status
	$(BENCH_OUT)/bin/node -exporter ./$(BINARY) -baseline $(BENCH_OUT)/bin/hccl_exporter-baseline -rounds $(BENCH_ROUNDS) \
		-work $(BENCH_OUT)/node-fixture -steady=false $(BENCH_NODE_FLAGS) \
		-label "--web.scrape-cache-ttl=0s" -extra "--web.scrape-cache-ttl=0s"

bench-all: bench-ingest bench-node bench-node-uncached

# The CANN log follower alone (docs/tailing.md): ingest against grep -rcE,
# and CPU while following 10,000 files idle and at 100 lines/s.
bench-tail:
	$(GO) run ./bench/tail ingest -sizes 100M,1G
	$(GO) run ./bench/tail steady -duration 30s -files 10000 -rates 0,100
