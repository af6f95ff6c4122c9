#!/usr/bin/env bash
# Builds helm (helm.sh/helm/v3/cmd/helm) from the Go module proxy at the version pinned in
# tools/helm/go.mod, for the tests of deploy/chart (helm lint, helm template). `make
# test-binaries` runs it. A module of its own, as tools/promtool (see hack/build-promtool.sh):
# helm's dependencies must not move the versions the other tools are built with.
#
# Usage: hack/build-helm.sh [OUTDIR]      (default: <repo>/bin)
# Kept when newer than tools/helm/go.mod, go.sum and this script; FORCE=1 rebuilds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOD="${ROOT}/tools/helm"
OUTDIR="${1:-${ROOT}/bin}"
mkdir -p "${OUTDIR}"
OUTDIR="$(cd "${OUTDIR}" && pwd)"
OUT="${OUTDIR}/helm"

log() { printf '[build-helm %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build-helm] ERROR: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
export CGO_ENABLED=0 GOWORK=off

fresh=1
[[ "${FORCE:-0}" != 1 && -x "${OUT}" ]] || fresh=0
for dep in "${MOD}/go.mod" "${MOD}/go.sum" "${BASH_SOURCE[0]}"; do
	[[ "${OUT}" -nt "${dep}" ]] || fresh=0
done
if [[ ${fresh} == 1 ]]; then
	log "helm: up to date (${OUT})"
else
	version="$(cd "${MOD}" && go list -m -f '{{.Version}}' helm.sh/helm/v3)"
	log "helm: building helm.sh/helm/v3/cmd/helm ${version} ..."
	start=${SECONDS}
	tmp="${OUT}.tmp.$$"
	# helm prints this as its version (helm version); built into a temp file and renamed, so an
	# interrupted build never looks fresh.
	if ! (cd "${MOD}" && go build -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${version}" \
		-o "${tmp}" helm.sh/helm/v3/cmd/helm); then
		rm -f "${tmp}"
		die "go build helm failed (see above)"
	fi
	mv -f "${tmp}" "${OUT}"
	log "helm: built in $((SECONDS - start))s -> ${OUT}"
fi
out="$("${OUT}" version --short 2>&1)" || die "${OUT} version failed: ${out}"
log "helm ${out}"
