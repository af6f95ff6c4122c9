#!/usr/bin/env bash
# roles.sh: the etcd users and roles of a gatewaydns landscape, in the central etcd.
#
#   deploy/etcd/roles.sh ZONE CLUSTER=OWNER [CLUSTER=OWNER...]
#   deploy/etcd/roles.sh openmcp.cluster eu1=prod.platform.eu1 us1=prod.platform.us1
#
# For each workload cluster CLUSTER, publishing CLUSTER.ZONE with owner id OWNER:
#   role and user  gatewaydns-CLUSTER
#     readwrite  /skydns/<reversed ZONE>/<reversed CLUSTER>/   its records, nothing else
#     readwrite  /gatewaydns/claims/skydns/<reversed ZONE>/<reversed CLUSTER>/
#                                                               its names' claim guards
#     readwrite  /gatewaydns/leader/OWNER/                      the election of its replicas
#     readwrite  /gatewaydns/leader-dry-run/OWNER/              that of its dry-run replicas
# For the central server (deploy/overlays/central):
#   role and user  gatewaydns-server
#     read       /skydns/<reversed ZONE>/                        every cluster's records
#
# e.g. eu1 above gets /skydns/cluster/openmcp/eu1/ and /gatewaydns/leader/prod.platform.eu1/;
# its Corefile must then say `domain-filter eu1.openmcp.cluster` (the writer reads and writes
# only under its domain filter). A key of another cluster, or outside the zone, is refused by
# etcd itself ("permission denied"), whatever the writer does.
#
# It talks to etcd with etcdctl as root; pass the connection the way etcdctl reads it:
#   ETCDCTL_ENDPOINTS=https://etcd.platform:2379  ETCDCTL_USER=root:PASSWORD
#   ETCDCTL_CACERT=... ETCDCTL_CERT=... ETCDCTL_KEY=...          (etcd over TLS)
# Other settings:
#   ETCDCTL        the etcdctl binary (default: etcdctl on PATH)
#   USER_PREFIX    prefix of the user and role names (default: gatewaydns-)
#   PASSWORDS_DIR  when set, the password of user U is read from the file $PASSWORDS_DIR/U if
#                  it exists (and set again on every run); users without a file get no password
#                  and authenticate with a TLS client certificate whose CN is the user name.
#   SKYDNS_PREFIX  the records' path (the Corefile's `path`; default /skydns)
#   LEADER_PREFIX  the election path (default /gatewaydns/leader)
#   CLAIM_PREFIX   the claim guards' path (default /gatewaydns/claims)
#
# Idempotent: run it again after adding a cluster. It creates what is missing and grants what
# is listed; it never removes a user, a role or a permission (revoke those by hand:
# `etcdctl role revoke-permission --prefix=true ROLE KEY`, `etcdctl user delete USER`).
# It does not enable auth: do that once, after creating root (`etcdctl user add root`,
# `etcdctl user grant-role root root`, `etcdctl auth enable`).
set -euo pipefail

usage() {
	sed -n '2,10p' "$0" >&2
	exit 2
}

[ $# -ge 1 ] || usage
case "$1" in -h | --help) usage ;; esac

ETCDCTL=${ETCDCTL:-etcdctl}
USER_PREFIX=${USER_PREFIX:-gatewaydns-}
SKYDNS_PREFIX=${SKYDNS_PREFIX:-/skydns}
LEADER_PREFIX=${LEADER_PREFIX:-/gatewaydns/leader}
CLAIM_PREFIX=${CLAIM_PREFIX:-/gatewaydns/claims}

# reverse a.b.c -> c/b/a (the SkyDNS key of a name)
reverse() {
	local IFS=. out="" label
	# shellcheck disable=SC2086
	for label in $1; do
		out="$label${out:+/$out}"
	done
	printf '%s' "$out"
}

# valid_name NAME: a lower-case domain name (labels of letters, digits, hyphens)
valid_name() {
	[[ $1 =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$ ]]
}

zone=${1%.}
shift
valid_name "$zone" || { echo "roles.sh: invalid zone '$zone'" >&2; exit 2; }
[ $# -ge 1 ] || { echo "roles.sh: no CLUSTER=OWNER given" >&2; usage; }

# Check every argument before changing anything.
for arg in "$@"; do
	cluster=${arg%%=*}
	owner=${arg#*=}
	if [ "$arg" = "$cluster" ] || [ -z "$cluster" ] || [ -z "$owner" ]; then
		echo "roles.sh: '$arg': want CLUSTER=OWNER" >&2
		exit 2
	fi
	valid_name "$cluster" || { echo "roles.sh: invalid cluster name '$cluster'" >&2; exit 2; }
	# An owner id is a path element of the election key: no slashes, no spaces.
	[[ $owner =~ ^[A-Za-z0-9._:-]+$ ]] || { echo "roles.sh: invalid owner id '$owner'" >&2; exit 2; }
done

etcdctl() { "$ETCDCTL" "$@"; }

# ensure_role ROLE: create ROLE unless it exists.
ensure_role() {
	if etcdctl role get "$1" >/dev/null 2>&1; then
		echo "role $1: exists"
	else
		etcdctl role add "$1" >/dev/null
		echo "role $1: created"
	fi
}

# ensure_user USER ROLE: create USER unless it exists, set its password from PASSWORDS_DIR,
# grant it ROLE.
ensure_user() {
	local user=$1 role=$2 pwfile=""
	if [ -n "${PASSWORDS_DIR:-}" ] && [ -f "$PASSWORDS_DIR/$user" ]; then
		pwfile=$PASSWORDS_DIR/$user
	fi
	if etcdctl user get "$user" >/dev/null 2>&1; then
		echo "user $user: exists"
		if [ -n "$pwfile" ]; then
			etcdctl user passwd "$user" --interactive=false <"$pwfile" >/dev/null
			echo "user $user: password set from $pwfile"
		fi
	elif [ -n "$pwfile" ]; then
		etcdctl user add "$user" --interactive=false <"$pwfile" >/dev/null
		echo "user $user: created, password from $pwfile"
	else
		etcdctl user add "$user" --no-password >/dev/null
		echo "user $user: created, no password (TLS client certificate with CN=$user)"
	fi
	etcdctl user grant-role "$user" "$role" >/dev/null
}

# grant ROLE read|readwrite PREFIX: permission on every key starting with PREFIX.
grant() {
	etcdctl role grant-permission --prefix=true "$1" "$2" "$3" >/dev/null
	echo "role $1: $2 $3"
}

zone_prefix="${SKYDNS_PREFIX%/}/$(reverse "$zone")/"

for arg in "$@"; do
	cluster=${arg%%=*}
	owner=${arg#*=}
	name="${USER_PREFIX}${cluster}"
	ensure_role "$name"
	grant "$name" readwrite "${zone_prefix}$(reverse "$cluster")/"
	grant "$name" readwrite "${CLAIM_PREFIX%/}${zone_prefix}$(reverse "$cluster")/"
	grant "$name" readwrite "${LEADER_PREFIX%/}/${owner}/"
	grant "$name" readwrite "${LEADER_PREFIX%/}-dry-run/${owner}/"
	ensure_user "$name" "$name"
done

server="${USER_PREFIX}server"
ensure_role "$server"
grant "$server" read "$zone_prefix"
ensure_user "$server" "$server"
