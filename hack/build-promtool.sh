#!/usr/bin/env bash
# Builds promtool (github.com/prometheus/prometheus/cmd/promtool) from the Go module proxy at the
# version pinned in tools/promtool/go.mod, for tests/monitoring_test.go (`promtool test rules`
# on deploy/monitoring). `make test-binaries` runs it after hack/build-test-binaries.sh.
#
# A module of its own, apart from tools/go.mod and hack/build-test-binaries.sh (built by
# hack/build-module-tool.sh): Prometheus's dependencies must not move the versions
# kube-apiserver and etcd are built with, and a change here must not make every machine rebuild
# kube-apiserver (that script rebuilds when it changes).
#
# Usage: hack/build-promtool.sh [OUTDIR]      (default: <repo>/bin; FORCE=1 rebuilds)
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUTDIR="${1:-${HACK}/../bin}"
"${HACK}/build-module-tool.sh" promtool github.com/prometheus/prometheus \
	github.com/prometheus/prometheus/cmd/promtool "${OUTDIR}" "${BASH_SOURCE[0]}" -ldflags "-s -w"
out="$("${OUTDIR}/promtool" --version 2>&1)" || { echo "[build-promtool] ERROR: promtool --version failed: ${out}" >&2; exit 1; }
printf '[build-promtool %s] promtool runs\n' "$(date +%H:%M:%S)"
