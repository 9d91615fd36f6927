# hccl_exporter — build, test and demo entry points.
# `make test` is what CI runs (.ci/run); it installs the Debian packages the
# end-to-end tests need when they are missing.

GO          ?= go
BINARY      ?= hccl_exporter
# Port of `make demo` and `make run-demo`; empty: a free one (demo), 9842 (run-demo).
DEMO_PORT   ?=
PKG         := github.com/hccl-exporter/hccl_exporter
# The release version is the VERSION file: the binary embeds it (so a plain
# `go build` reports it too), and the release tarballs, the image tag and the
# Helm chart carry it (a test checks they agree). ldflags add only the build
# context: revision, branch, user, date.
VERSION     := $(shell cat VERSION)
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH      ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
BUILD_DATE  ?= $(shell date -u +%Y%m%d-%H:%M:%S)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS     := -s -w \
	-X $(VERSION_PKG).Revision=$(REVISION) \
	-X $(VERSION_PKG).Branch=$(BRANCH) \
	-X $(VERSION_PKG).BuildUser=$(shell id -un 2>/dev/null || echo unknown)@$(shell hostname 2>/dev/null || echo unknown) \
	-X $(VERSION_PKG).BuildDate=$(BUILD_DATE)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
TEST_FLAGS  ?= -race -timeout 15m

.PHONY: all build image image-push demo run-demo test test-short test-deps unit lint fmt vet staticcheck fuzz bench clean mixin backtest

all: lint build test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BINARY) ./cmd/hccl_exporter

# The container image, tagged with VERSION. Push it where your nodes pull
# from: make image image-push IMAGE=registry.example.com/infra/hccl_exporter:$(VERSION)
# (multi-arch: docker buildx build --platform linux/amd64,linux/arm64 --push
# with the same --build-arg's).
DOCKER ?= docker
IMAGE  ?= hccl_exporter:$(VERSION)
image:
	$(DOCKER) build --build-arg REVISION=$(REVISION) --build-arg BRANCH=$(BRANCH) \
		--build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMAGE) .

image-push:
	$(DOCKER) push $(IMAGE)

# Runs the exporter on the bundled demo data (fake npu-smi, CANN log root,
# screen log) and prints the interesting part of its metrics page.
demo:
	DEMO_PORT=$(DEMO_PORT) ./scripts/demo.sh

# Same as demo, but keeps serving on :9842 (DEMO_PORT=N: on port N) until
# interrupted.
run-demo: build
	DEMO_PORT=$(DEMO_PORT) ./scripts/demo.sh --serve

# The whole test suite, as CI runs it.
test: test-deps lint unit

test-deps:
	./scripts/ensure-test-deps.sh

# A test whose external tool (promtool, helm, jsonnet, chromium, kubectl,
# unshare as root …) cannot be had fails here instead of skipping.
unit:
	HCCL_EXPORTER_REQUIRE_TOOLS=1 $(GO) test $(TEST_FLAGS) ./...
	@# Bounds a user waits on, checked without the race detector's slowdown.
	$(GO) test -count=1 -run 'TestScale1000Ranks' ./diagnose/

# The quick inner loop: unit, golden and fuzz-seed tests; end-to-end and
# timing-guard tests skip themselves under -short (make test runs them).
test-short:
	$(GO) test -short ./...

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) run $(STATICCHECK) ./...

# Regenerates mixin/lib/faultcodes.json from the fault-code table
# (internal/cann/logstate/codes.go), alerts/hccl_exporter.rules.yml and
# dashboards/*.json from the monitoring mixin (mixin/, go-jsonnet pinned), then everything derived from
# the rules file (make deploy-manifests). mixin/README.md says how to edit.
JSONNET    := github.com/google/go-jsonnet/cmd/jsonnet@v0.22.0
JSONNETFMT := github.com/google/go-jsonnet/cmd/jsonnetfmt@v0.22.0
mixin:
	$(GO) run ./mixin/internal/faultcodes mixin/lib/faultcodes.json
	$(GO) run $(JSONNETFMT) -i $$(find mixin -name '*.libsonnet' -o -name '*.jsonnet')
	$(GO) run $(JSONNET) -S -m . mixin/lib/render.jsonnet
	$(MAKE) deploy-manifests

# Short coverage-guided run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 20s
fuzz:
	./scripts/fuzz-all.sh $(FUZZTIME)

# The replay backtest of the preventive alerts (internal/backtest,
# docs/headroom.md "Backtest"): scripted job timelines through the real
# binary, a fake npu-smi and the shipped rules in a real Prometheus, time
# compressed 60x; prints the lead-time table (about 1.5 minutes). `make
# test` runs it too. BACKTEST_RUN=<name part> runs some timelines only.
backtest: test-deps
	@mkdir -p bench/out
	@BACKTEST_TABLE=$(CURDIR)/bench/out/backtest.md $(GO) test -count=1 -run TestBacktest ./internal/backtest/; \
	st=$$?; cat bench/out/backtest.md 2>/dev/null; exit $$st

# Performance benchmarks (bench/bench.mk, docs/benchmarks.md); BENCH_SIZE=small for a quick run.
bench: bench-all

clean:
	rm -rf $(BINARY) dist bench/out

-include deploy/deploy.mk
-include bench/bench.mk
