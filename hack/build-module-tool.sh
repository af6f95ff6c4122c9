#!/usr/bin/env bash
# Builds one tool the tests run from the Go module proxy, at the version a module of its own
# pins (tools/<name>/go.mod), so that its dependencies never move the versions of go.mod,
# tools/go.mod or another tool's. hack/build-promtool.sh and hack/build-helm.sh call it.
#
# Usage: hack/build-module-tool.sh NAME MODULE PKG OUTDIR CALLER [go build flags...]
#   NAME    the binary (OUTDIR/NAME)       MODULE  the module whose version is printed
#   PKG     the main package to build       CALLER  the calling script (its change rebuilds)
# The module directory is tools/NAME. A binary newer than tools/NAME/go.mod, go.sum, this script
# and CALLER is kept; FORCE=1 rebuilds. It is built into a temp file and renamed, so an
# interrupted build never leaves a half-written binary that looks fresh.
set -euo pipefail

NAME="$1" MODULE="$2" PKG="$3" OUTDIR="$4" CALLER="$5"
shift 5
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOD="${ROOT}/tools/${NAME}"
mkdir -p "${OUTDIR}"
OUTDIR="$(cd "${OUTDIR}" && pwd)"
OUT="${OUTDIR}/${NAME}"

log() { printf '[build-%s %s] %s\n' "${NAME}" "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build-%s] ERROR: %s\n' "${NAME}" "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
export CGO_ENABLED=0 GOWORK=off

fresh=1
[[ "${FORCE:-0}" != 1 && -x "${OUT}" ]] || fresh=0
for dep in "${MOD}/go.mod" "${MOD}/go.sum" "${BASH_SOURCE[0]}" "${CALLER}"; do
	[[ "${OUT}" -nt "${dep}" ]] || fresh=0
done
if [[ ${fresh} == 1 ]]; then
	log "${NAME}: up to date (${OUT})"
	exit 0
fi
version="$(cd "${MOD}" && go list -m -f '{{.Version}}' "${MODULE}")"
log "${NAME}: building ${PKG} ${version} ..."
start=${SECONDS}
tmp="${OUT}.tmp.$$"
if ! (cd "${MOD}" && go build -trimpath "$@" -o "${tmp}" "${PKG}"); then
	rm -f "${tmp}"
	die "go build ${PKG} failed (see above)"
fi
mv -f "${tmp}" "${OUT}"
log "${NAME}: built in $((SECONDS - start))s -> ${OUT}"
