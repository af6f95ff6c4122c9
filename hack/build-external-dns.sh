#!/usr/bin/env bash
# Builds external-dns (sigs.k8s.io/external-dns) at the version gatewaydns migrates from, for
# tests/migration/migration_test.go (which runs it against a real etcd and kube-apiserver) and for
# `make bench` (phase P measures its propagation). The one place that builds it:
# `make test-binaries` runs this script, bench uses the binary it leaves.
#
# Usage: hack/build-external-dns.sh [OUTDIR]      (default: <repo>/bin)
#
# `go install module@version` needs no go.mod of ours, so external-dns's dependencies never
# touch the versions in go.mod or tools/go.mod. A binary already in OUTDIR is kept when
# `go version -m` says it was built from this module version (whoever built it: a copy from
# another checkout is as good); FORCE=1 rebuilds. A cold build takes several minutes on
# 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTDIR="${1:-${ROOT}/bin}"
mkdir -p "${OUTDIR}"
OUTDIR="$(cd "${OUTDIR}" && pwd)"
OUT="${OUTDIR}/external-dns"

MODULE="sigs.k8s.io/external-dns"
VERSION="v0.21.0"

log() { printf '[build-external-dns %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build-external-dns] ERROR: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
export CGO_ENABLED=0 GOWORK=off

# built_from BIN: BIN is an executable whose main module is ${MODULE} ${VERSION}.
built_from() {
	local info
	[[ -x "$1" ]] || return 1
	info="$(go version -m "$1" 2>/dev/null)" || return 1
	grep -qE "^[[:space:]]+mod[[:space:]]+${MODULE}[[:space:]]+${VERSION}([[:space:]]|\$)" <<<"${info}"
}

if [[ "${FORCE:-0}" != 1 ]] && built_from "${OUT}"; then
	log "external-dns: up to date (${OUT}, ${MODULE} ${VERSION})"
	exit 0
fi

log "external-dns: building ${MODULE}@${VERSION} (several minutes on a cold cache) ..."
start=${SECONDS}
# go install writes GOBIN/external-dns in place; install into a directory of our own next to
# OUT instead and rename, so an interrupted build never leaves a half-written binary at OUT.
tmp="$(mktemp -d "${OUTDIR}/.external-dns.build.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT
if ! (cd "${tmp}" && GOBIN="${tmp}" go install "${MODULE}@${VERSION}"); then
	die "go install ${MODULE}@${VERSION} failed (see above)"
fi
built_from "${tmp}/external-dns" || die "go install left no ${MODULE} ${VERSION} binary in ${tmp}"
mv -f "${tmp}/external-dns" "${OUT}"
log "external-dns: built in $((SECONDS - start))s -> ${OUT}"
