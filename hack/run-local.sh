#!/usr/bin/env bash
# Runs gatewaydns locally: a throwaway etcd on 127.0.0.1:23790 with a few example records,
# and ./coredns serving openmcp.cluster from it on 127.0.0.1:1053 (corefile.d/central.Corefile).
# Ctrl-C stops both. Try: dig @127.0.0.1 -p 1053 app.eu1.openmcp.cluster
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"
WORK="${ROOT}/.cache/run"
ETCD_URL="http://127.0.0.1:23790"
DNS_PORT="${DNS_PORT:-1053}"

for f in "${BIN}/etcd" "${BIN}/etcdctl" "${ROOT}/coredns"; do
	[[ -x "$f" ]] || { echo "missing $f: run 'make run' (it builds what it needs)" >&2; exit 1; }
done
rm -rf "${WORK}" && mkdir -p "${WORK}"

echo "starting etcd on ${ETCD_URL} (log: ${WORK}/etcd.log)"
"${BIN}/etcd" --data-dir "${WORK}/etcd" --listen-client-urls "${ETCD_URL}" --advertise-client-urls "${ETCD_URL}" \
	--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
	--initial-cluster default=http://127.0.0.1:23800 >"${WORK}/etcd.log" 2>&1 &
ETCD_PID=$!
trap 'kill ${ETCD_PID} 2>/dev/null; wait ${ETCD_PID} 2>/dev/null' EXIT
for _ in $(seq 100); do
	"${BIN}/etcdctl" --endpoints "${ETCD_URL}" endpoint health >/dev/null 2>&1 && break
	sleep 0.1
done

put() { "${BIN}/etcdctl" --endpoints "${ETCD_URL}" put "$1" "$2" >/dev/null; }
echo "writing example records (as gatewaydns or external-dns would)"
put /skydns/cluster/openmcp/eu1/app/3e6bee2e '{"host":"203.0.113.10","ttl":60,"targetstrip":1,"owner":"eu1"}'
put /skydns/cluster/openmcp/eu1/app/9a0c11f0 '{"host":"203.0.113.11","ttl":60,"targetstrip":1,"owner":"eu1"}'
put /skydns/cluster/openmcp/us1/shop/5d1c0e2a '{"host":"app.eu1.openmcp.cluster","ttl":60,"targetstrip":1,"owner":"us1"}'
put /skydns/cluster/openmcp/us1/api/_tcp/_https/1 '{"host":"198.51.100.7","port":443,"ttl":60}'

cat <<MSG

gatewaydns serves openmcp.cluster on 127.0.0.1:${DNS_PORT}. In another shell:
  dig @127.0.0.1 -p ${DNS_PORT} app.eu1.openmcp.cluster
  dig @127.0.0.1 -p ${DNS_PORT} shop.us1.openmcp.cluster
  dig @127.0.0.1 -p ${DNS_PORT} _https._tcp.api.us1.openmcp.cluster SRV
  ${BIN}/etcdctl --endpoints ${ETCD_URL} put /skydns/cluster/openmcp/eu1/new/1 '{"host":"203.0.113.99"}'
  dig @127.0.0.1 -p ${DNS_PORT} new.eu1.openmcp.cluster      # answered at once
Ctrl-C stops it.

MSG
GATEWAYDNS_ETCD_ENDPOINTS="${ETCD_URL}" "${ROOT}/coredns" -conf "${ROOT}/corefile.d/central.Corefile" -dns.port "${DNS_PORT}"
