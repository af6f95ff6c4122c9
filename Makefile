# gatewaydns: CoreDNS with the gatewaydns plugin.
#   make demo            build, start a landscape on loopback (TLS etcd, 2 clusters, 3 CoreDNS), dig it; make demo-down stops it
#                        (builds only what it runs: the binary, etcd, etcdctl, kube-apiserver)
#   make run             build, start a local etcd with example records, serve them on :1053
#   make test            the whole test suite (race detector on), as CI runs it
#   make build           ./coredns
#   make generate        regenerate the plugin list from plugin.cfg
#   make test-binaries   etcd, etcdctl, etcdutl, kube-apiserver, kubeadm, promtool, external-dns and helm for the tests, into ./bin
#   make fuzz            every fuzz target for FUZZTIME seconds (default 10)
#   make bench           benchmarks vs the stock etcd, cache and hosts plugins and external-dns (BENCHFLAGS=...)
#   make soak            the load, reload, outage and convergence tests at full length: 60s of dnsperf load and churn,
#                        50 reloads, etcd outages of 300s for both roles, 5 minutes of seeded faults
#   make lint            gofmt and go vet
#   make image           the container image for linux/amd64 and linux/arm64, no docker engine needed: an OCI layout,
#                        a tarball per platform for docker/podman load and SBOMs in _output/image (IMAGE=... names it)

GITCOMMIT ?= $(shell git describe --dirty --always 2>/dev/null || echo unknown)
LDFLAGS   := -s -w -X github.com/coredns/coredns/coremain.GitCommit=$(GITCOMMIT)
# The base's name, which no registry serves: this project publishes no image, so a name of its
# own would look like one. Name it after your registry, as the overlays' images: do
# (deploy/README.md "The image").
IMAGE     ?= gatewaydns-coredns:$(GITCOMMIT)
IMAGE_OUT ?= _output/image
# The repository declares no license yet; set an SPDX expression here once it does.
LICENSES  ?= NOASSERTION
GO        ?= go
TESTFLAGS ?=

.PHONY: build
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o coredns ./cmd/coredns

.PHONY: generate
generate:
	$(GO) generate ./cmd/coredns/plugins

.PHONY: test-binaries
test-binaries:
	hack/build-test-binaries.sh bin
	hack/build-promtool.sh bin
	hack/build-external-dns.sh bin
	hack/build-helm.sh bin

# deploy/chart reads deploy/monitoring from copies (helm reads no file outside the chart):
# run after changing alerts.yaml or dashboard.json (TestChartMonitoringIsDeployMonitoring).
.PHONY: chart-files
chart-files:
	cp deploy/monitoring/alerts.yaml deploy/monitoring/dashboard.json deploy/chart/files/

# What make demo runs (etcdctl: the commands it prints), and make run: not kubeadm, promtool
# and external-dns, which only the tests run and which took most of a first demo's 18 minutes.
.PHONY: demo-binaries run-binaries
demo-binaries:
	hack/build-test-binaries.sh bin etcd etcdctl kube-apiserver
run-binaries:
	hack/build-test-binaries.sh bin etcd etcdctl

# The end-to-end packages go first, longest first, so that none starts last after the others:
# alerting is six and a half minutes of scenarios that mostly wait; faults, publish, migration,
# tests/ itself, lifecycle, transfer and deploy took about 340, 290, 155, 140, 125, 100 and
# 50 s on a CI machine (their tests' times in one package, which ran 18 minutes); steering
# about 30 s here (one landscape of two API servers, under the race detector). Three test
# binaries at a time on two cores: most of each package's time is spent waiting on its
# processes (outages, leases, schedules), not computing.
E2E_PACKAGES := ./tests/alerting/ ./tests/faults/ ./tests/publish/ ./tests/migration/ ./tests/ \
	./tests/lifecycle/ ./tests/transfer/ ./tests/deploy/ ./tests/steering/
.PHONY: test
test: build test-binaries
	GATEWAYDNS_COREDNS=$(CURDIR)/coredns GATEWAYDNS_TEST_BIN=$(CURDIR)/bin \
		$(GO) test -race -count=1 -p 3 -timeout 25m $(TESTFLAGS) $(E2E_PACKAGES) ./...

.PHONY: run
run: build run-binaries
	hack/run-local.sh

# make demo builds the binary, the tools it runs and its driver side by side: each build has
# stretches that leave a core idle (downloading modules, linking), which the others fill.
DEMO_DRIVER := $(CURDIR)/.cache/bin/gatewaydns-demo
.PHONY: demo demo-driver
demo:
	@$(MAKE) --no-print-directory -j3 build demo-binaries demo-driver
	@echo "==> .cache/bin/gatewaydns-demo up"
	@$(DEMO_DRIVER) up
demo-driver:
	CGO_ENABLED=0 $(GO) build -trimpath -o $(DEMO_DRIVER) ./hack/demo

# make demo-down uses the driver make demo built, or builds it the same way when it is missing:
# never a go run, with other flags, which would compile it again for minutes.
.PHONY: demo-down
demo-down:
	@test -x $(DEMO_DRIVER) || $(MAKE) --no-print-directory demo-driver
	@$(DEMO_DRIVER) down

.PHONY: soak
soak: build test-binaries
	GATEWAYDNS_SOAK=1 GATEWAYDNS_COREDNS=$(CURDIR)/coredns GATEWAYDNS_TEST_BIN=$(CURDIR)/bin \
		$(GO) test -race -count=1 -timeout 30m -v -run 'TestServesUnderLoad|TestReload|TestAnOutage|TestConverges|TestARouteCreatedAfterEachKubeAPIServerRestart' \
		./tests/ ./tests/lifecycle/ ./tests/faults/ ./plugin/gatewaydns/mirror/ ./plugin/gatewaydns/writer/

FUZZTIME ?= 10
.PHONY: fuzz
fuzz:
	hack/fuzz.sh $(FUZZTIME)

# Not part of `make test`: about 12 minutes on 2 cores (plus building external-dns into ./bin
# once), and it wants the machine to itself. Writes bench/results/<date>.md and .svg.
BENCHFLAGS ?=
.PHONY: bench
bench: build test-binaries
	@command -v dnsperf >/dev/null 2>&1 || { echo "--- installing dnsperf"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dnsperf >/dev/null; }
	@command -v knotd >/dev/null 2>&1 && command -v nsd >/dev/null 2>&1 || { echo "--- installing knot and nsd (phase X's secondaries)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq knot nsd >/dev/null; }
	$(GO) run ./bench $(BENCHFLAGS)

.PHONY: lint
lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

.PHONY: image
# The binary `make build` makes, once per platform, put in an image by hack/image (Go,
# go-containerregistry): the Dockerfile's image without a docker engine. Every file and the
# config are stamped with the commit's time, so the same commit gives the same digests.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
image:
	@mkdir -p $(IMAGE_OUT)
	@set -e; for p in $(IMAGE_PLATFORMS); do \
		echo "--- go build $$p"; \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
			-o $(IMAGE_OUT)/coredns-$${p%/*}-$${p#*/} ./cmd/coredns; \
	done
	$(GO) run ./hack/image -name $(IMAGE) -out $(IMAGE_OUT) \
		-created $$(git log -1 --format=%ct) -revision $$(git rev-parse HEAD) -version $(GITCOMMIT) \
		-source https://github.com/gatewaydns/gatewaydns -licenses $(LICENSES) \
		$(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(IMAGE_OUT)/coredns-$(subst /,-,$(p)))

.PHONY: clean
clean:
	rm -rf coredns .cache _output
