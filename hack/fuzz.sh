#!/usr/bin/env bash
# Runs every Go native fuzz target for SECONDS each (default 10), one after another, and fails
# if any of them fails. A crasher is written by go test to the package's
# testdata/fuzz/<FuzzName>/ directory: commit it with the fix, it then runs as a seed in
# every plain `go test`.
#
# Usage: hack/fuzz.sh [SECONDS]
set -uo pipefail

SECONDS_EACH="${1:-10}"
[[ "${SECONDS_EACH}" =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# package            target
TARGETS=(
	"./plugin/gatewaydns/record FuzzDecode"
	"./plugin/gatewaydns/source FuzzHostnameIntersection"
	"./plugin/gatewaydns        FuzzParse"
	"./plugin/gatewaydns/index  FuzzQuery"
)

failed=()
for t in "${TARGETS[@]}"; do
	read -r pkg name <<<"${t}"
	printf '[fuzz %s] %s %s for %ss\n' "$(date +%H:%M:%S)" "${pkg}" "${name}" "${SECONDS_EACH}"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${SECONDS_EACH}s" "${pkg}"; then
		failed+=("${pkg} ${name}")
	fi
done

if ((${#failed[@]} > 0)); then
	printf '[fuzz] FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "[fuzz] all ${#TARGETS[@]} targets passed"
