#!/usr/bin/env bash
# drop-ownerless.sh: the last step of a migration from external-dns --registry=noop
# (docs/migration.md). external-dns then wrote its keys without owner and no registry record,
# so no writer may take them over; once the gatewaydns writer of OWNER publishes the same names,
# each such key has a twin of OWNER: same name, same data. This lists them, and with --delete
# deletes each in a transaction that checks that the key is unchanged and its twin still there,
# so that no name loses an answer.
#
#   deploy/etcd/drop-ownerless.sh [--delete] PREFIX OWNER
#   deploy/etcd/drop-ownerless.sh /skydns/cluster/openmcp/eu1/ eu1            (lists)
#   deploy/etcd/drop-ownerless.sh --delete /skydns/cluster/openmcp/eu1/ eu1   (deletes)
#
# Output, one key a line:
#   drop KEY (twin TWIN)   a key without owner that OWNER's key TWIN duplicates (deleted, with --delete)
#   keep KEY               a key without owner and no twin: a name the writer does not publish
#                          (written by hand, or rejected by the writer: see its Events); left alone
# Keys with an owner are never listed nor touched. With --delete, a key that changed meanwhile is
# reported "changed KEY" and kept: run it again.
#
# It talks to etcd with etcdctl (ETCDCTL_ENDPOINTS, ETCDCTL_USER, ETCDCTL_CACERT... as etcdctl
# reads them; ETCDCTL is the binary, default etcdctl on PATH) and needs jq.
set -euo pipefail

usage() {
	sed -n '2,21p' "$0" >&2
	exit 2
}

delete=false
if [ "${1:-}" = --delete ]; then
	delete=true
	shift
fi
[ $# -eq 2 ] || usage
prefix=$1
owner=$2
case "$prefix" in /*/) ;; *) echo "drop-ownerless.sh: PREFIX must start and end with /: '$prefix'" >&2; exit 2 ;; esac
[ -n "$owner" ] || usage
ETCDCTL=${ETCDCTL:-etcdctl}

# One line per key without owner: "drop KEY MODREV TWIN" or "keep KEY". A key's name is its path
# without the last element; its data are host, text, port, priority and mail.
plan=$("$ETCDCTL" get --prefix "$prefix" -w json | jq -r --arg owner "$owner" '
	def data: {host: (.host // ""), text: (.text // ""), port: (.port // 0), priority: (.priority // 0), mail: (.mail // false)};
	[.kvs[]? | (.value | @base64d | try fromjson catch null) as $v | select($v | type == "object")
		| {key: (.key | @base64d), rev: .mod_revision, owner: ($v.owner // ""), data: ($v | data)}
		| .name = (.key | sub("/[^/]*$"; ""))] as $all
	| ($all | map(select(.owner == $owner))) as $own
	| $all[] | select(.owner == "") | . as $k
	| ([$own[] | select(.name == $k.name and .data == $k.data)] | first) as $twin
	| if $twin then "drop \($k.key) \($k.rev) \($twin.key)" else "keep \($k.key)" end')

dropped=0 kept=0 changed=0
while read -r what key rev twin; do
	[ -n "$what" ] || continue
	if [ "$what" = keep ]; then
		echo "keep $key"
		kept=$((kept + 1))
		continue
	fi
	if ! $delete; then
		echo "drop $key (twin $twin)"
		dropped=$((dropped + 1))
		continue
	fi
	result=$(printf 'mod("%s") = "%s"\ncreate("%s") > "0"\n\ndel %s\n\n\n' "$key" "$rev" "$twin" "$key" | "$ETCDCTL" txn)
	if [ "$(head -n1 <<<"$result")" = SUCCESS ]; then
		echo "drop $key (twin $twin): deleted"
		dropped=$((dropped + 1))
	else
		echo "changed $key: kept"
		changed=$((changed + 1))
	fi
done <<<"$plan"

if $delete; then
	echo "deleted $dropped, kept $kept without twin, $changed changed meanwhile"
else
	echo "would delete $dropped (--delete), $kept without twin kept"
fi
[ "$changed" -eq 0 ]
