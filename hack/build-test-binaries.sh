#!/usr/bin/env bash
# Builds the real components the integration tests run against:
#   kube-apiserver and kubeadm (k8s.io/kubernetes), etcd, etcdctl and etcdutl (go.etcd.io/etcd)
# from the Go module proxy, at the versions pinned in tools/go.mod.
#
# Usage: hack/build-test-binaries.sh [OUTDIR [NAME...]]      (default: <repo>/bin, all five)
#
# NAMEs (etcd, etcdctl, etcdutl, kube-apiserver, kubeadm) build only those: `make demo` and `make run`
# ask for what they run, so a first demo does not wait for kubeadm (or, in the Makefile, for
# promtool and external-dns), which only the tests run.
#
# A binary that already exists and is newer than tools/go.mod, tools/go.sum
# and this script is kept, so a second run is fast. FORCE=1 rebuilds all.
# A cold build takes several minutes on 2 cores (kube-apiserver is most of it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${ROOT}/tools"
OUTDIR="${1:-${ROOT}/bin}"
shift || true
ALL=(etcd etcdctl etcdutl kube-apiserver kubeadm)
WANT=("$@")
[[ ${#WANT[@]} -gt 0 ]] || WANT=("${ALL[@]}")
for w in "${WANT[@]}"; do
	[[ " ${ALL[*]} " == *" ${w} "* ]] || { printf '[build-test-binaries] ERROR: unknown binary %s (want: %s)\n' "${w}" "${ALL[*]}" >&2; exit 2; }
done
# wanted NAME: NAME was asked for.
wanted() { [[ " ${WANT[*]} " == *" $1 "* ]]; }
mkdir -p "${OUTDIR}"
OUTDIR="$(cd "${OUTDIR}" && pwd)"

KUBE_VERSION="v1.36.3"
ETCD_VERSION="3.7.3"

log() { printf '[build-test-binaries %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[build-test-binaries] ERROR: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go is not on PATH"
[[ -f "${TOOLS}/go.mod" ]] || die "missing ${TOOLS}/go.mod"

# Sanity: the pinned versions in this script must match tools/go.mod.
grep -q "k8s.io/kubernetes ${KUBE_VERSION}\$" "${TOOLS}/go.mod" ||
	die "tools/go.mod does not require k8s.io/kubernetes ${KUBE_VERSION}; update KUBE_VERSION in $0"
grep -q "go.etcd.io/etcd/server/v3 v${ETCD_VERSION}\$" "${TOOLS}/go.mod" ||
	die "tools/go.mod does not require go.etcd.io/etcd/server/v3 v${ETCD_VERSION}; update ETCD_VERSION in $0"

export CGO_ENABLED=0
export GOWORK=off

# up_to_date BIN: the binary exists and is newer than everything that decides
# how it is built.
up_to_date() {
	local bin="$1" dep
	[[ "${FORCE:-0}" != 1 && -x "${bin}" ]] || return 1
	for dep in "${TOOLS}/go.mod" "${TOOLS}/go.sum" "${BASH_SOURCE[0]}"; do
		[[ "${bin}" -nt "${dep}" ]] || return 1
	done
}

# build NAME PKG [go build flags...]: builds into a temp file then renames it,
# so an interrupted build never leaves a half-written binary that looks fresh.
build() {
	local name="$1" pkg="$2"
	shift 2
	wanted "${name}" || return 0
	local out="${OUTDIR}/${name}"
	if up_to_date "${out}"; then
		log "${name}: up to date (${out})"
		return 0
	fi
	log "${name}: building ${pkg} ..."
	local start=${SECONDS}
	local tmp="${out}.tmp.$$"
	if ! (cd "${TOOLS}" && go build -trimpath -o "${tmp}" "$@" "${pkg}"); then
		rm -f "${tmp}"
		die "${name}: go build ${pkg} failed (see above)"
	fi
	mv -f "${tmp}" "${out}"
	log "${name}: built in $((SECONDS - start))s -> ${out}"
}

BUILD_DATE="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
KUBE_MINOR="$(echo "${KUBE_VERSION}" | cut -d. -f2)"
KUBE_MAJOR="$(echo "${KUBE_VERSION#v}" | cut -d. -f1)"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
	kube_ldflags+=" -X ${pkg}.gitMajor=${KUBE_MAJOR}"
	kube_ldflags+=" -X ${pkg}.gitMinor=${KUBE_MINOR}"
	kube_ldflags+=" -X ${pkg}.gitTreeState=clean"
	kube_ldflags+=" -X ${pkg}.buildDate=${BUILD_DATE}"
done

total_start=${SECONDS}
log "output directory: ${OUTDIR}"
# etcd first: it is small, and its dependencies warm the cache for the rest.
build etcd go.etcd.io/etcd/server/v3 -ldflags "-s -w"
build etcdctl go.etcd.io/etcd/etcdctl/v3 -ldflags "-s -w"
# etcdutl: the tests restore etcd from a snapshot as an operator does (testenv.EtcdCluster.Restore).
build etcdutl go.etcd.io/etcd/etcdutl/v3 -ldflags "-s -w"
# Same build tags as upstream's hack/lib/golang.sh for release binaries.
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
	-tags selinux,notest,grpcnotrace -ldflags "${kube_ldflags}"
# kubeadm: tests/deploy/kubeadm_test.go runs its CoreDNS add-on phase (kubeadm's own manifests,
# made the way kubeadm makes them) before applying deploy/overlays over them.
build kubeadm k8s.io/kubernetes/cmd/kubeadm -tags selinux,notest -ldflags "${kube_ldflags}"

# Check that what we have runs and is the expected version. (Capture the
# output first: with pipefail, `bin --version | grep -q` can fail on SIGPIPE.)
check_version() {
	local bin="$1" want="$2" out
	shift 2
	wanted "$(basename "${bin}")" || return 0
	out="$("${bin}" "$@" 2>&1)" || die "${bin} $* failed: ${out}"
	grep -qxF -- "${want}" <<<"${out}" ||
		die "${bin} $* does not print '${want}' (stale or broken binary? FORCE=1 rebuilds):"$'\n'"${out}"
	log "$(basename "${bin}"): ${want}"
}
check_version "${OUTDIR}/kube-apiserver" "Kubernetes ${KUBE_VERSION}" --version
check_version "${OUTDIR}/kubeadm" "${KUBE_VERSION}" version -o short
check_version "${OUTDIR}/etcd" "etcd Version: ${ETCD_VERSION}" --version
check_version "${OUTDIR}/etcdctl" "etcdctl version: ${ETCD_VERSION}" version
check_version "${OUTDIR}/etcdutl" "etcdutl version: ${ETCD_VERSION}" version
log "done in $((SECONDS - total_start))s: ${WANT[*]} (kube-apiserver and kubeadm ${KUBE_VERSION}, etcd, etcdctl and etcdutl ${ETCD_VERSION}) in ${OUTDIR}"
