#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3/cmd/helm) at the version pinned in tools/helm/go.mod, for the
# tests of deploy/chart (tests/deploy/chart_test.go: helm lint, helm template). `make
# test-binaries` runs it.
#
# Usage: hack/build-helm.sh [OUTDIR]      (default: <repo>/bin; FORCE=1 rebuilds)
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUTDIR="${1:-${HACK}/../bin}"
version="$(cd "${HACK}/../tools/helm" && GOWORK=off go list -m -f '{{.Version}}' helm.sh/helm/v3)"
# helm version prints what internal/version.version says: set it as helm's release build does.
"${HACK}/build-module-tool.sh" helm helm.sh/helm/v3 helm.sh/helm/v3/cmd/helm "${OUTDIR}" "${BASH_SOURCE[0]}" \
	-ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${version}"
out="$("${OUTDIR}/helm" version --short 2>&1)" || { echo "[build-helm] ERROR: helm version failed: ${out}" >&2; exit 1; }
printf '[build-helm %s] helm %s runs\n' "$(date +%H:%M:%S)" "${out}"
