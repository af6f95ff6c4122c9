#!/usr/bin/env bash
# Builds promtool (github.com/prometheus/prometheus/cmd/promtool) from the Go module proxy at the
# version pinned in tools/promtool/go.mod, for tests/monitoring_test.go (`promtool test rules`
# on deploy/monitoring). `make test-binaries` runs it after hack/build-test-binaries.sh.
#
# A script and a module of their own, apart from tools/go.mod and hack/build-test-binaries.sh:
# Prometheus's dependencies must not move the versions kube-apiserver and etcd are built with,
# and a change here must not make every machine rebuild kube-apiserver (that script rebuilds
# when it changes).
#
# Usage: hack/build-promtool.sh [OUTDIR]      (default: <repo>/bin)
# Kept when newer than tools/promtool/go.mod, go.sum and this script; FORCE=1 rebuilds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOD="${ROOT}/tools/promtool"
OUTDIR="${1:-${ROOT}/bin}"
mkdir -p "${OUTDIR}"
OUTDIR="$(cd "${OUTDIR}" && pwd)"
OUT="${OUTDIR}/promtool"

log() { printf '[build-promtool %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build-promtool] ERROR: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
export CGO_ENABLED=0 GOWORK=off

fresh=1
[[ "${FORCE:-0}" != 1 && -x "${OUT}" ]] || fresh=0
for dep in "${MOD}/go.mod" "${MOD}/go.sum" "${BASH_SOURCE[0]}"; do
	[[ "${OUT}" -nt "${dep}" ]] || fresh=0
done
if [[ ${fresh} == 1 ]]; then
	log "promtool: up to date (${OUT})"
else
	version="$(cd "${MOD}" && go list -m -f '{{.Version}}' github.com/prometheus/prometheus)"
	log "promtool: building github.com/prometheus/prometheus/cmd/promtool ${version} ..."
	start=${SECONDS}
	tmp="${OUT}.tmp.$$"
	# Built into a temp file and renamed, so an interrupted build never looks fresh.
	if ! (cd "${MOD}" && go build -trimpath -ldflags "-s -w" -o "${tmp}" github.com/prometheus/prometheus/cmd/promtool); then
		rm -f "${tmp}"
		die "go build promtool failed (see above)"
	fi
	mv -f "${tmp}" "${OUT}"
	log "promtool: built in $((SECONDS - start))s -> ${OUT}"
fi
out="$("${OUT}" --version 2>&1)" || die "${OUT} --version failed: ${out}"
log "promtool runs"
