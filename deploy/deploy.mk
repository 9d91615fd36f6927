# Deployment targets, included from the top-level Makefile (which defines GO,
# PKG, VERSION, REVISION, BRANCH, BUILD_DATE and LDFLAGS).
#
#   make deploy-manifests   regenerate deploy/kubernetes/prometheusrule.yaml
#                           and alerts/sharded/ (per-node and cross-node
#                           halves) from alerts/hccl_exporter.rules.yml, and
#                           the chart's files/ (rules, dashboards) from mixin/
#   make release            static linux/amd64 + linux/arm64 binaries, tarballs
#                           and sha256sums.txt in dist/

RELEASE_PLATFORMS ?= linux/amd64 linux/arm64
DIST              ?= dist
RULES_FILE        ?= alerts/hccl_exporter.rules.yml
PROMETHEUS_RULE   ?= deploy/kubernetes/prometheusrule.yaml
# Release archives carry the version without a leading "v".
RELEASE_VERSION    = $(patsubst v%,%,$(VERSION))

.PHONY: deploy-manifests check-deploy-manifests release release-clean

deploy-manifests:
	$(GO) run ./deploy/kubernetes/internal/genrule -rules $(RULES_FILE) -out $(PROMETHEUS_RULE)
	$(GO) run $(JSONNET) -S -m . deploy/helm/internal/chartfiles.jsonnet
	$(GO) run ./alerts/internal/splitrules -dir alerts

check-deploy-manifests:
	$(GO) run ./deploy/kubernetes/internal/genrule -rules $(RULES_FILE) -out $(PROMETHEUS_RULE) -check
	$(GO) run ./alerts/internal/splitrules -dir alerts -check

release-clean:
	rm -rf $(DIST)

# One directory per platform, named as Prometheus exporters name theirs
# (hccl_exporter-<version>.<os>-<arch>), with the binary, the license-free
# deployment files and the docs an operator needs on a node.
release: release-clean
	@set -e; mkdir -p $(DIST); \
	for p in $(RELEASE_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; \
		name=$(BINARY)-$(RELEASE_VERSION).$$os-$$arch; \
		dir=$(DIST)/$$name; mkdir -p $$dir; \
		echo ">> building $$name"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' \
			-o $$dir/$(BINARY) ./cmd/hccl_exporter; \
		cp deploy/systemd/hccl_exporter.service deploy/systemd/hccl_exporter.default $$dir/; \
		for f in README.md LICENSE docs/deploy.md docs/security.md; do \
			if [ -f $$f ]; then cp $$f $$dir/; fi; \
		done; \
		tar -C $(DIST) --owner=0 --group=0 --numeric-owner --sort=name \
			-czf $(DIST)/$$name.tar.gz $$name; \
		rm -rf $$dir; \
	done; \
	cd $(DIST) && sha256sum *.tar.gz > sha256sums.txt && cat sha256sums.txt
