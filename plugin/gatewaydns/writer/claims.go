package writer

import (
	"cmp"
	"errors"
	"path"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/plan"
	"github.com/gatewaydns/gatewaydns/plugin/gatewaydns/record"
)

// DefaultClaimPrefix is where the writers keep each claimed name's guard key: the name's key
// path below it, e.g. /gatewaydns/claims/skydns/cluster/openmcp/eu1/app/ for
// app.eu1.openmcp.cluster. Outside the records' path, so that no reader of the zone (this
// plugin, the stock etcd plugin) ever sees one.
const DefaultClaimPrefix = "/gatewaydns/claims"

// A claim must commit only if no other owner claimed the name since it was read. Comparing
// every key under the name, as claims once did, also compares every name below it: for a
// zone's apex, etcd read the whole zone on every member while applying the transaction, and
// any write anywhere in the zone made the claim stale, three tries in a row under a steady
// trickle. Every claim puts the name's guard key instead, and compares its mod revision with
// the name's read: one key, whatever lies below the name. The guard goes with the claimant's
// records' lease, if any, and is deleted when an owner withdraws from the name; deleting
// another owner's guard costs that owner's claim in flight one more plan, nothing else.
//
// Without the permission to write guards (an etcd role granted before they existed), a
// refused claim is made again the old way, comparing the name's whole key range, and every
// claim after it too; the Observer is told once (ClaimGuardObserver).

// ClaimGuardObserver is an optional part of Observer: told once that etcd refused a claim
// guard under prefix, so claims compare their names' whole key ranges instead.
type ClaimGuardObserver interface {
	ClaimGuardsRefused(prefix string, err error)
}

func (w *Writer) claimPrefix() string {
	return path.Clean(cmp.Or(w.cfg.ClaimPrefix, DefaultClaimPrefix))
}

// guardKey is name's claim guard.
func (w *Writer) guardKey(name string) string {
	return w.claimPrefix() + record.NamePath(w.cfg.Prefix, name) + "/"
}

// guards reports whether claims use guard keys (not refused by etcd so far).
func (w *Writer) guards() bool { return !w.guardsDenied.Load() }

// claimCompare is the compare of a claim on name read at readAt: its guard unchanged since,
// or without guards no key under the name.
func (w *Writer) claimCompare(guards bool, name string, readAt int64) clientv3.Cmp {
	if guards {
		return clientv3.Compare(clientv3.ModRevision(w.guardKey(name)), "<", readAt+1)
	}
	base := record.NamePath(w.cfg.Prefix, name) + "/"
	return clientv3.Compare(clientv3.ModRevision(base), "<", readAt+1).WithPrefix()
}

// claimGuard is the put of c's claim guard, on the lease of its records.
func (w *Writer) claimGuard(c plan.Change) clientv3.Op {
	var opts []clientv3.OpOption
	if len(c.Puts) > 0 && c.Puts[0].Lease != 0 {
		opts = append(opts, clientv3.WithLease(clientv3.LeaseID(c.Puts[0].Lease)))
	}
	return clientv3.OpPut(w.guardKey(c.Name), w.cfg.Owner, opts...)
}

// refuseGuards turns the guards off after etcd refused a transaction with them that it took
// without them; it tells the Observer the first time.
func (w *Writer) refuseGuards(err error) {
	if w.guardsDenied.CompareAndSwap(false, true) {
		if o, ok := w.obs.(ClaimGuardObserver); ok {
			o.ClaimGuardsRefused(w.claimPrefix(), err)
		}
	}
}

func permissionDenied(err error) bool {
	return errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrGRPCPermissionDenied)
}
